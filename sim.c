/* sim.c -- Loom Lab's simulator: platform threads vs virtual threads on one workload.
 *
 * A microservice aggregator under load, simulated twice. `platform` is the 1:1 model: a
 * Tomcat pool of OS threads, each blocked in the kernel while its request waits on I/O.
 * `virtual` is Loom's M:N model: a virtual thread per request on `parallelism` carriers,
 * parked while it waits, pinned inside `synchronized`. Both draw the same random numbers for
 * the same request, so a difference in the report is the execution model, not luck. Every
 * time is an integer number of nanoseconds (simtime); memory is in bytes.
 *   ./sim --headless scenarios/default.scn (the report), ./sim scenarios/default.scn (window)
 * READING PATH  The lesson, an evening: I.1 to I.6, between the banners "lesson begins" and
 *   "lesson ends" (struct model_ops is every difference between the models). Then, as you need
 *   them, I.7 to I.12 (what it calls by name) and Parts II to IV. Skip Part V (the window).
 * FLOW  text -> struct scenario -> model_init -> model_step loop -> stats/series -> report|window
 * EVENTS (ev_handlers[], I.6)  EV_ARRIVE wl_arrive, EV_BURST_END cpu_burst_end, EV_IO_DONE
 *   svc_done, EV_SAMPLE model_sample, EV_IO_STEP_DONE model_io_step_done, EV_SHED svc_shed,
 *   EV_IDLE_CHECK model_idle_check, EV_THREAD_WAKE model_thread_wake, EV_BATCH model_batch
 * CONTENTS (each line is a banner below)
 *   Part I. The two models
 *     I.1 Types and invariants  scenario, request, call, thread, core, stats, model, ops, view
 *     I.2 Request interpreter  req_, conn_: the program both models run
 *     I.3 Platform model  plat_: Tomcat's executor and its TaskQueue growth
 *     I.4 Virtual model  vt_: carriers, parking, pinning, compensation
 *     I.5 Workload  wl_: closed-loop users or open-loop Poisson arrivals
 *     I.6 Engine  model_: init, one event, run, samples and peaks
 *     I.7 OS scheduler  cpu_: C cores, one run queue, time slices
 *     I.8 Threads  thr_: OS threads' states, spawn and exit
 *     I.9 Downstream services  svc_: pools, ephemeral ports, TIME_WAIT, a par's cancellation
 *     I.10 Engine bookkeeping  model_: peaks, series rows, steady-state bins, batches, prefetch
 *     I.11 The window's view  model_: threads and requests read-only, an event's narration
 *     I.12 Refused users' retries  wl_: a user refused waits for a free place, its tries counted
 *   Part II. Tools
 *     II.1 Random streams  rng_: a SplitMix64 stream per request, xoshiro256**
 *     II.2 Distributions  dist_: const, uniform, exp, lognormal from p50/p99
 *     II.3 Latency histogram  hist_: the same text as in aggregator.c
 *     II.4 Event queue  evq_: (time, insertion order); a heap and sorted lanes
 *     II.5 Storage  slot_, fifo_: growable arrays, free lists, intrusive FIFOs
 *     II.6 Files  io_: regular files in, checked writes out
 *   Part III. Scenario files
 *     III.1 Keys  scn_keys[]: one row per key, the format
 *     III.2 Values and programs  scn_value, scn_dist, the program grammar
 *     III.3 Loading and checks  scn_set, scn_load, scn_finish, --keys
 *   Part IV. Reports and instruments
 *     IV.1 Reports  rep_: table, JSON, CSV, 95% intervals, steady state, bounds, series
 *     IV.2 Chrome trace  trace_: a lane per thread, for Perfetto
 *     IV.3 Validation  val_: --validate, prediction beside measurement
 *     IV.4 Live telemetry  live_: --live, a running aggregator's /metrics
 *   Part V. Window
 *     V.1 Drawing context  ui_: colours, batches, text, setup
 *     V.2 Reading the models  through model_ops' words and the engine's view (I.11)
 *     V.3 Panels  grids and the stations of a panel
 *     V.4 Charts  the time series, both models overlaid
 *     V.5 The frame  bars, overlays, ui_draw
 *     V.6 Two models on one clock  stepping, seeking, narration
 *     V.7 Headless frames  --screenshot, --frames, --plot (a sweep's picture)
 *     V.8 Interactive window  keys, mouse, the loop
 *   Part VI. Command line and main
 *     VI.1 Options  opt_rows[]: a row per flag; --help is made from it
 *     VI.2 Modes  sim_: one function per mode (headless, validate, live, window)
 *     VI.3 main
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#define SDL_MAIN_HANDLED
#include <SDL.h>
#include <stb_image_write.h>
#include <stb_truetype.h>
#include <sys/stat.h>
#include <sys/mman.h>

typedef int64_t simtime; /* nanoseconds of simulated time */
#define NS  ((simtime)1)
#define US  ((simtime)1000)
#define MS  ((simtime)1000000)
#define SEC ((simtime)1000000000)

/* Ahead of the Parts. C wants a type complete before a struct embeds it, and a macro defined
 * before its use; the Parts run in reading order, so the few tool types the model embeds by
 * value are here, and their code is in Part II. */

/* II.2: a random duration. Parameters are in ns; lognormal keeps mu/sigma of ln(ns). */
enum dist_shape { DIST_CONST, DIST_UNIFORM, DIST_EXP, DIST_LOGNORMAL };
struct dist {
    uint8_t shape; /* enum dist_shape */
    double a, b;   /* const: a; uniform: [a,b); exp: mean a; lognormal: mu a, sigma b */
};

/* II.5: an intrusive FIFO of indices into an array whose elements start with `int32_t next`. */
struct fifo {
    int32_t head, tail, len;
};
#define FIFO_EMPTY           ((struct fifo){-1, -1, 0})
#define FIFO_PUSH(q, arr, i) fifo_push((q), (arr), sizeof *(arr), (i))
#define FIFO_POP(q, arr)     fifo_pop((q), (arr), sizeof *(arr))

/* II.4: a timestamped event. Ties are broken by insertion order, so runs are deterministic. */
struct event {
    simtime t;
    uint64_t order; /* insertion sequence << 8 | type (for speed only: see II.4) */
    uint32_t a, b;
};

/* II.4: a lane: events pushed in time order (a FIFO is then already sorted), e.g. the answers
 * of a service whose latency is constant. A ring buffer, oldest at head. */
struct evq_lane {
    struct event *buf;
    uint32_t head, len, cap; /* cap is a power of two */
};

/* The lanes: one per service (modulo), then users' arrivals, pool wake-ups, idle timers, the
 * users' first arrivals (spread over the ramp-up, in user order: already sorted), and one per
 * core (modulo) for its slices' ends (a core has one slice at a time). */
enum {
    EVQ_SERVICE_LANES = 7,
    EVQ_ARRIVALS = EVQ_SERVICE_LANES,
    EVQ_WAKEUPS,
    EVQ_TIMERS,
    EVQ_RAMPUP,
    EVQ_CORES,
    EVQ_CORE_LANES = 4,
    EVQ_LANES = EVQ_CORES + EVQ_CORE_LANES
};
/* An event's place in the order: its time, then its insertion order. */
struct evq_key {
    simtime t;
    uint64_t order;
};
struct evq {
    struct event *heap; /* a binary heap for everything else */
    size_t nheap, capheap;
    struct evq_lane lane[EVQ_LANES];
    struct evq_key first[EVQ_LANES]; /* a copy of each busy lane's head's key (II.4) */
    size_t len;                      /* events in the heap and the lanes */
    size_t nlaned;                   /* of those, in the lanes */
    uint32_t busy;                   /* bit i set <=> lane[i].len > 0 (evq_peek reads only those) */
    uint64_t seq;
};

/* The policy of a par(...) whose call fails (on_failure): cancel the siblings and fail at
 * once, as JDK 25's StructuredTaskScope.open() does with its default joiner (the scope's
 * shutdown interrupts every unfinished subtask), or wait for every sibling (join all). */
enum on_failure { ON_FAILURE_CANCEL, ON_FAILURE_WAIT };
static const char *const on_failure_names[] = {"cancel", "wait", NULL};

/* What a downstream call is doing, for a cancellation (svc_cancel_call, I.9). */
enum call_where { CALL_WAIT_CONN, CALL_WAIT_SLOT, CALL_IN_SERVICE, CALL_CANCELLED };

/* The fan-out's figures in the statistics window (I.9 counts them, IV.1 reports them): the
 * failed requests' latency, the calls begun, the time calls held a connection. */
struct scope_stats {
    struct hist *failed_lat; /* ns, requests failed in the window; NULL until the first */
    uint64_t failed, calls;  /* requests failed, calls begun, in the window */
    double held_ns;          /* connections held by calls, released in the window */
};

/* ==== Part I. The two models ==== */

/* ~~~~ The lesson begins: the types, the request interpreter, the two models, the engine ~~~~ */

/* Tested by tests/test_sim.c (the models against theory: Little's law, Erlang C and B, the
 * utilisation law, pinning, compensation, the port wall, the schedulers' invariants, common
 * random numbers, determinism) and tests/test_verdict.c. */

/* THE CORE MODEL IN A FEW SENTENCES
 *   A request is a tiny program: cpu(d), call(service), io(d), sync { ... }, par(A,B,...).
 *   The interpreter (req_continue, I.2) walks it; whenever the request needs CPU it asks
 *   its thread for a burst, and whenever it waits for I/O it asks its model, through
 *   m->ops, to block it. The platform model answers "your OS thread sleeps in the kernel";
 *   the virtual model answers "you unmount and park; the carrier runs someone else", unless
 *   the request is inside sync, where the carrier is pinned. Threads (pool workers or
 *   carriers) compete for cores in one OS scheduler. Everything else (queues, pools, ports)
 *   is shared code.
 *
 * CALIBRATED COSTS
 *   Teaching scenarios set costs by hand; `./aggregator calibrate` measures them on the
 *   machine (--calibration FILE): CPU per request, per call and per new connection, each
 *   scaled by the cache pressure of the requests in service (cpu_cost); a pool thread's
 *   release after its answer (platform.release_cpu, see req_finish); memory; the loopback's
 *   latency. --validate then predicts the real aggregator's bench, point by point. */

/* ---- I.1 Types and invariants ---- */

/* One step of a request's program. */
enum step_op {
    OP_CPU,        /* burn CPU for a sampled duration on the request's thread */
    OP_CALL,       /* one blocking downstream call (socket I/O: virtual threads park) */
    OP_PAR,        /* `nsvc` calls at once, then wait for all (structured fan-out) */
    OP_IO,         /* blocking the JDK compensates (Object.wait, file I/O): sampled time */
    OP_SYNC_BEGIN, /* enter `synchronized`: blocking in here pins a carrier (JDK 21) */
    OP_SYNC_END,
};

#define MAX_STEPS    64
#define MAX_SERVICES 16
#define MAX_PAR      16

struct step {
    uint8_t op;
    uint8_t nsvc;         /* OP_CALL: 1, OP_PAR: number of calls */
    uint8_t svc[MAX_PAR]; /* service indices for CALL/PAR */
    struct dist d;        /* OP_CPU, OP_IO */
};

/* A downstream service, as configured. */
struct service_cfg {
    char name[24];
    struct dist latency;  /* time the service takes to answer one call */
    int limit;            /* calls it serves at once, 0 = unlimited */
    int pool;             /* keep-alive connections in the caller's pool, 0 = new TCP per call */
    simtime connect_time; /* added to a call that opens a new connection */
    simtime timeout;      /* a call slower than this fails (504), 0 = never */
    double fail_share;    /* calls that answer an error, 0..1, each drawn from the request */
    simtime fail_after;   /* when such a call answers (its error), instead of `latency` */
    simtime wait;         /* longest a call waits for the limit's permit, then fails (503,
                             load shedding); SVC_WAIT_UNLIMITED = no bound */
    char wait_at[96];     /* where `wait` was set ("file:line"), "" if not */
    char key_at[96];      /* where a key first named it ("file:line", "--set ..."); "" if only
                             a program did (scn_finish: a named service must be called) */
};

#define SVC_WAIT_UNLIMITED (-1)

/* Everything a scenario file can say. Every field has one row in scn_keys[] (at most
 * SCN_MAX_KEYS rows). */
#define SCN_MAX_KEYS 64
struct scenario {
    char name[64];
    uint64_t seed;
    simtime duration, warmup, sample_interval;
    int warmup_auto; /* 1: no file or --set gave `warmup`: a report may lengthen it (rep_warmup);
                        2: a report did */
    /* workload */
    long users;          /* closed loop: N users; 0 = open loop at `rate` */
    double rate;         /* open loop arrivals per second (Poisson) */
    struct dist think;   /* closed loop: think time between a user's requests */
    simtime rampup;      /* users start evenly spread over this time */
    simtime retry_after; /* a user whose request failed waits this long more */
    char program_text[512];
    struct step prog[MAX_STEPS];
    int nsteps;
    /* machine and runtime */
    int cores;
    int runtime_threads;        /* GC, JIT, acceptor, poller...: counted in both models */
    int model_threads[2];       /* per model, overriding runtime_threads when >= 0 */
    simtime ctx_switch;         /* CPU cost when a core switches to another OS thread */
    simtime timeslice;          /* the OS scheduler's quantum */
    simtime thread_create;      /* CPU cost of creating an OS thread */
    simtime wakeup;             /* CPU to return from a blocking call on an OS thread */
    simtime wakeup_latency;     /* from signalling an idle thread until it runs */
    simtime release_cpu;        /* a pool thread's CPU after the response, before it is idle */
    long thread_stack_reserved; /* bytes of address space per OS thread (-Xss) */
    long thread_stack_rss;      /* bytes actually committed per OS thread */
    /* per-model costs of one implementation (set by calibration; 0 in teaching scenarios) */
    simtime cpu_per_request[2]; /* CPU to accept, parse and answer one request */
    simtime cpu_per_call[2];    /* CPU per downstream call: its syscalls, on the caller's thread */
    int auth;                   /* enum auth_alg: a bearer token checked per request, or off */
    simtime auth_cpu[3];        /* its CPU by `auth` ([0], off: 0), the program's first step */
    /* these costs (and connect_cpu) grow by this fraction per request in service */
    double cache_pressure;
    long mem_base;           /* process RSS with no load, bytes */
    long mem_per_request;    /* per request being served (on a thread or a virtual thread), bytes */
    long mem_per_connection; /* per open client connection, served or waiting, bytes */
    /* platform model (Tomcat defaults) */
    int max_threads, min_spare, max_connections, accept_count, max_queue;
    simtime idle_timeout;
    /* virtual model (Loom defaults) */
    int parallelism, max_pool_size;
    simtime vt_create, vt_park, vt_unpark, carrier_keepalive;
    long vt_stack_bytes;
    int jep491;   /* 1: synchronized no longer pins (JDK 24) */
    int vt_sched; /* enum vt_policy: how runnable virtual threads find a carrier (I.4) */
    /* network */
    int port_low, port_high, tw_reuse;
    int close_first; /* enum net_closer: whose side of a closed connection holds TIME_WAIT */
    int on_failure;  /* enum on_failure: a par(...) whose call fails cancels or waits */
    simtime time_wait;
    simtime connect_cpu;      /* CPU a new TCP connection costs (connect, accept, close) */
    struct dist call_latency; /* added to every call: the network stack between the services */
    /* downstream services */
    struct service_cfg svc[MAX_SERVICES];
    int nsvc;
    char calibrated[1024]; /* keys set from a calibration file, comma-separated */
    /* where each key of scn_keys[] got its value, for the cross-key checks' messages */
    char key_at[SCN_MAX_KEYS][96]; /* "file:line" or "--set ..."; "" for the default */
    int key_seq[SCN_MAX_KEYS];     /* the order they were set in (0: the default) */
    int nset;                      /* keys set so far */
};

/* Why a request failed. X-macro: the enum and its names stay in step. */
#define FAIL_REASONS(X)                                                                            \
    X(FAIL_REFUSED, "refused", "connection refused: maxConnections and acceptCount full")          \
    X(FAIL_REJECTED, "rejected", "503: the executor's bounded queue was full")                     \
    X(FAIL_NO_PORT, "no_port", "connect failed: ephemeral ports exhausted (TIME_WAIT)")            \
    X(FAIL_TIMEOUT, "timeout", "504: a downstream call timed out")                                 \
    X(FAIL_SHED, "shed", "503: no permit (service limit) within its wait: load shed")              \
    X(FAIL_ERROR, "error", "502: a downstream call answered an error (service fail_share)")
#define X_ENUM(e, name, doc) e,
enum fail_reason { FAIL_NONE = -1, FAIL_REASONS(X_ENUM) FAIL_N };
#define X_NAME(e, name, doc) name,
static const char *const fail_names[] = {FAIL_REASONS(X_NAME)};
#define X_DOC(e, name, doc) doc,
static const char *const fail_docs[] = {FAIL_REASONS(X_DOC)};

/* Where a request is in its program. */
enum req_phase {
    PH_START,    /* about to begin step pc */
    PH_CPU,      /* running step pc's CPU burst */
    PH_PREBLOCK, /* paying the model's cost of blocking (parking) before step pc's I/O */
    PH_WAIT,     /* blocked in step pc's I/O */
    PH_RELEASE,  /* answered; its pool thread is returning to the pool (platform.release_cpu) */
};

/* A request in flight. Index-linked: never hold a pointer across an allocation.
 * Invariant: a request is in at most one FIFO at a time (backlog, executor queue, run queue). */
struct req {
    int32_t next;       /* intrusive FIFO link, -1 at the tail */
    int32_t thr;        /* platform: its OS thread; virtual: its carrier while mounted; else -1 */
    int32_t user;       /* closed loop: the user who sent it; -1 for open loop */
    uint16_t pc;        /* current step */
    uint8_t phase;      /* enum req_phase */
    int8_t fail;        /* enum fail_reason, FAIL_NONE while healthy */
    uint8_t sync_depth; /* nesting of sync { } */
    uint8_t pending;    /* downstream calls not yet answered */
    uint8_t parked;     /* virtual: unmounted and waiting for I/O */
    uint8_t pinned;     /* virtual: blocked while mounted (pinned or compensated) */
    uint8_t admitted;   /* holds one of the connector's maxConnections */
    int32_t calls;      /* its calls in flight, linked by call.sib (a par's siblings) */
    uint64_t rng;       /* SplitMix64 state of the request's own stream */
    simtime arrived;    /* when it reached the server */
    simtime debt;       /* overhead CPU owed before the next step (creation, park, unpark) */
    uint32_t id;        /* shown in the window, "VT#512" / "req#512" */
    int32_t home;       /* virtual, per-carrier schedulers: the carrier whose run queue it
                           joins when runnable (I.4, vt_home); -1 before its first */
};

/* A downstream call in flight. It waits in a pool's or service's FIFO on its own link, so a
 * fan-out request can wait in several queues at once. */
struct call {
    int32_t next;
    int32_t req;
    uint8_t svc;
    uint8_t timed_out;
    uint8_t new_conn;     /* opened a TCP connection (no pooling, or pool growing) */
    uint8_t fails, where; /* it answers an error (fail_share); enum call_where */
    int32_t sib;          /* the request's next call in flight (req.calls), -1 at the end */
    simtime conn_at;      /* when it got its connection */
    simtime latency; /* sampled when the step began, in program order (common random numbers) */
    simtime shed_at; /* waiting for the service's limit: when it gives up (service.wait) */
};

enum thr_state { THR_IDLE, THR_READY, THR_RUNNING, THR_BLOCKED, THR_NSTATES };
static const char *const thr_state_names[] = {"idle", "ready", "running", "blocked"};

/* An OS thread: a pool worker (platform) or a carrier (virtual). Slots of dead threads are
 * reused; `id` is never reused, so a student can follow "T#17". */
struct thr {
    int32_t next;  /* intrusive link: ready queue or idle list */
    int32_t req;   /* request it serves / virtual thread it carries, -1 if none */
    int32_t core;  /* core it runs on, -1 if none */
    uint8_t state; /* enum thr_state */
    uint8_t alive;
    uint8_t extra; /* virtual: a compensating carrier beyond parallelism */
    uint32_t id;
    uint32_t idle_gen;  /* bumps when it leaves idle: stale idle-timeout events are ignored */
    simtime burst_left; /* CPU still wanted in the current burst */
    simtime since;      /* when it entered its state (for the trace and the window) */
    simtime born;       /* when it was created */
    uint32_t served;    /* requests it has finished (pool worker) or carried to their end */
    /* its idle check (EV_IDLE_CHECK): at most one queued, see thr_idle_timer */
    uint8_t timer;      /* one is queued */
    uint8_t rearm;      /* a later idle period wants one: at rearm_at, ordered by rearm_seq */
    uint32_t rearm_gen; /* that period's idle_gen */
    simtime rearm_at;
    uint64_t rearm_seq;
};

/* A core. Invariant: thr >= 0 iff exactly one BURST_END event for this core is pending. */
struct core {
    int32_t thr;  /* thread running here, -1 if idle */
    int32_t last; /* thread that ran here last: switching to another costs ctx_switch */
    simtime run;  /* length of the slice in progress, including the switch cost */
    simtime cpu;  /* the part of `run` that is the thread's own work */
    simtime end;  /* when the slice in progress ends (its EV_BURST_END) */
};

/* TIME_WAIT sockets of one side: a ring of their expiry times, oldest first (all TIME_WAITs
 * last equally long, so closing order is expiry order). */
struct tw_ring {
    simtime *at;
    int32_t head, len, cap;
};

/* A downstream service as one model sees it: its queues, its pool, its ports. */
struct svc_state {
    int32_t in_service;             /* calls being served now */
    struct fifo wait_slot;          /* calls waiting for the service's concurrency limit */
    int32_t conns_open, conns_busy; /* pooled keep-alive connections */
    struct fifo wait_conn;          /* calls waiting for a pooled connection */
    int32_t ports_open;             /* local ports held by open connections */
    struct tw_ring tw;              /* our ports in TIME_WAIT (net.close_first = client) */
    struct tw_ring peer_tw;         /* the service's TIME_WAITs (close_first = server) */
    uint64_t opened, calls, inflight;
};

enum ev_type {
    EV_ARRIVE,       /* a: user (closed loop) or unused (open loop) */
    EV_BURST_END,    /* a: core */
    EV_IO_DONE,      /* a: call, b: its request (for model_prefetch only) */
    EV_IO_STEP_DONE, /* a: request whose io(d) step finished */
    EV_IDLE_CHECK,   /* a: thread, b: its idle_gen when it became idle */
    EV_SAMPLE,
    EV_THREAD_WAKE, /* a: a signalled platform pool thread */
    EV_BATCH,       /* a: the batch of the window that begins (0 at warmup) */
    EV_SHED,        /* a: a service whose oldest waiting call may have waited its `wait` */
};

enum model_id { MODEL_PLATFORM, MODEL_VIRTUAL, MODEL_N };
/* virtual.scheduler: how a runnable virtual thread finds a carrier (I.4 says each) */
enum vt_policy { VT_STEAL, VT_FIFO, VT_HOME, VT_NPOLICY };
static const char *const vt_policy_names[VT_NPOLICY + 1] = {"steal", "fifo", "home", NULL};
/* net.close_first: who closes an unpooled downstream connection first. TCP puts the side that
 * closes first in TIME_WAIT: client, the aggregator, whose ephemeral port is then held for
 * net.time_wait (the port wall); server, the downstream (asked by `Connection: close`), whose
 * TIME_WAIT sits on its own port and is taken over by a new SYN of the same 4-tuple (Linux's
 * tcp_timewait_state_process), so the aggregator's port is free again at close. */
enum net_closer { CLOSE_CLIENT, CLOSE_SERVER, CLOSE_N };
static const char *const net_closer_names[CLOSE_N + 1] = {"client", "server", NULL};
static const char *const model_names[] = {"platform", "virtual"};

/* The model of that name ("platform", "virtual"), -1 if none. */
static int model_named(const char *name)
{
    for (int k = 0; k < MODEL_N; k++)
        if (!strcmp(name, model_names[k]))
            return k;
    return -1;
}

struct model;
struct model_words;
struct model_view;
struct vt_sched_ops; /* virtual.scheduler's policy, I.4 */
/* The one seam: what the two execution models do differently, as a table of operations,
 * one per model (plat_ops in I.3, vt_ops in I.4), chosen by model_init. The request
 * interpreter and the engine call these; everything else is shared. What differs only in
 * value (costs, the runtime's threads) is copied into struct model by model_init. */
struct model_ops {
    void (*admit)(struct model *, int32_t r);                 /* the connector accepted r */
    simtime (*block_cost)(struct model *, int32_t r, int op); /* CPU r pays before blocking */
    void (*block)(struct model *, int32_t r, int op);         /* r waits for I/O */
    void (*wake)(struct model *, int32_t r);                  /* r's I/O completed */
    void (*release)(struct model *, int32_t r);               /* r left: free its thread */
    void (*thread_free)(struct model *, int32_t t);           /* t ended a burst with no request */
    int32_t (*in_service)(const struct model *);        /* requests holding a thread or a VT */
    int32_t (*runnable)(const struct model *);          /* virtual threads waiting for a carrier */
    int (*may_retire)(const struct model *, int32_t t); /* may idle thread t exit now? */
    /* the same charges, read by the bounds on throughput (IV.1) without running a request */
    simtime (*request_cpu)(const struct model *); /* CPU once per request, beyond cpu_per_request */
    simtime (*step_cpu)(const struct model *, int op, int in_sync); /* around one blocking step */
    int32_t (*holders)(const struct model *, int op, int in_sync);  /* threads that can hold a
                                                     request in this step; 0: it holds none */
    /* the engine's calls */
    void (*init)(struct model *); /* its own state, and the threads it starts with */
    void (*fini)(struct model *); /* frees its own state */
    void (*thread_wake)(struct model *, const struct event *e); /* EV_THREAD_WAKE: a: thread */
    int32_t (*queued)(const struct model *); /* requests waiting for a thread of it */
    /* what a frame shows of it (Part V reads a model through these and the common state) */
    const struct model_words *words;
    void (*view)(const struct model *, struct model_view *);
    /* thread t's own run queue, NULL: none; the thread whose own run queue r waits in, -1 */
    const struct fifo *(*thread_runq)(const struct model *, int32_t t);
    int32_t (*queued_at)(const struct model *, int32_t r);
    int interruptible; /* 1: an interrupt ends its request's wait on a call (a parked VT) */
};

/* What the window and the plots show of a model, fixed: its words and how it is drawn. Each
 * model fills its own (plat_words in I.3, vt_words in I.4); a third model would fill a third
 * and change no line of Part V. */
struct model_words {
    const char *title;                   /* its panel's title */
    const char *thr_prefix, *req_prefix; /* "T#17" or "C#1"; "req#512" or "VT#512" */
    const char *worker;                  /* its OS threads, short: "thread", "carrier" */
    const char *thread, *threads;        /* one of them, and all of them, in the window */
    const char *queue;                   /* where a request waits for a thread */
    int dashed; /* its line in charts and plots: 0 solid (platform), 1 dashed */
    int ink;    /* its line's and title's ink in the window: the window's model ink this one */
    /* 1: a request waiting on I/O leaves its thread (parks), and the lot below the threads
     * shows the parked ones by service; 0: the lot shows the queue for a thread */
    int parks;
    /* 1: a request is a thread of its own, runnable without an OS thread (new before it
     * first runs); 0: without one it is queued */
    int req_thread;
    int blocked_pins; /* a thread blocked in the kernel is pinned by its request */
};

/* What a frame shows of a model now (model_ops.view fills it). */
struct model_view {
    int32_t on_io; /* requests waiting on I/O: parked, or blocking their thread */
    int32_t busy;  /* its threads carrying a request, -1: not shown */
    /* the arrivals' box: the requests of box[0..nbox), then those of every thread's own run
     * queue (model_ops.thread_runq) in thread order, box_own of them */
    const struct fifo *box[2];
    int nbox;
    int32_t box_own;
    char label[96]; /* the box's title */
};

/* Counters a model keeps, all over the whole run unless named _window. */
#define STEADY_BINS 100

/* One batch of the statistics window (--batches): what batch means need of it. */
struct batch {
    uint64_t done;     /* requests completed in it */
    double lat_sum;    /* their latencies' sum, ns */
    struct hist *lat;  /* their latencies */
    simtime busy_from; /* stats.busy_ns when it began */
};

struct stats {
    uint64_t arrived, completed, failed[FAIL_N];
    uint64_t completed_window; /* completed inside [warmup, duration] */
    uint64_t thread_creations, ctx_switches, parks, events;
    struct hist *lat;          /* latency (ns) of requests completed in the window */
    double lat_sum;            /* their sum, in ns, for the mean */
    struct hist *lat_interval; /* the same, reset at each sample */
    uint64_t interval_done;
    simtime busy_ns, busy_at_sample;
    simtime busy_at_warmup; /* busy_ns when the window began: utilisation covers the window */
    struct batch *batch;    /* the window in nbatch equal batches (none unless asked) */
    int32_t nbatch, cur_batch;
    /* [0, duration] in at most STEADY_BINS bins of whole samples (model_sample), what the
     * verdict (rep_steady) and the warm-up (rep_warmup) read: completions, their latency */
    uint64_t bin_done[STEADY_BINS];
    double bin_lat[STEADY_BINS], bin_in_system[STEADY_BINS]; /* ns; in flight at each sample */
    int32_t bin_samples[STEADY_BINS];
    uint64_t done_at_sample;
    double lat_at_sample;
    /* peaks */
    int32_t peak_os_threads, peak_carriers_busy, peak_vt_parked, peak_vt_pinned;
    int32_t peak_ports_tw, peak_queued, peak_in_flight, peak_blocked;
    int64_t peak_thread_mem, peak_thread_reserved;
    int64_t peak_rss; /* mem.base + thread memory + in flight x mem.per_request */
    struct scope_stats scope;
};

/* One execution model simulating the scenario. The two models share nothing mutable. */
struct model {
    int id; /* enum model_id: its name, its column, its panel (model_ops_by_id[id] its ops) */
    const struct scenario *s;
    const struct model_ops *ops; /* what this model does differently (see struct model_ops) */
    /* this model's values of per-model keys, set by model_init */
    simtime cpu_per_request; /* calibrated CPU per request (accept, parse, answer) */
    simtime cpu_per_call;    /* calibrated CPU per downstream call */
    simtime release_cpu;     /* platform.release_cpu; 0 for virtual threads (plat_init) */
    int runtime_threads;     /* the runtime's own OS threads (GC, JIT, ...) */
    struct evq events;       /* what happens next, in (time, insertion order) */
    simtime now;
    /* requests and calls: growable arrays with free lists */
    struct req *req;
    int32_t nreq, capreq, free_req;
    struct call *call;
    int32_t ncall, capcall, free_call;
    /* OS threads (workers or carriers) and cores */
    struct thr *thr;
    int32_t nthr, capthr, free_thr;
    struct core *core;
    struct fifo ready; /* threads waiting for a core */
    struct fifo idle;  /* idle threads, FIFO like Java's LinkedBlockingQueue waiters */
    int32_t thr_state_n[THR_NSTATES], threads_alive, next_thread_id;
    int32_t ports_tw; /* ports in TIME_WAIT, all services (sum of svc[].tw.len) */
    int32_t peer_tw;  /* the services' sockets in TIME_WAIT (sum of svc[].peer_tw.len) */
    /* connector */
    int32_t conns;       /* connections held by requests in the server */
    int32_t in_flight;   /* arrived and not yet completed or failed */
    struct fifo backlog; /* accepted by the kernel, not yet by the server (acceptCount) */
    /* platform: the executor's queue; virtual: the scheduler's run queue */
    struct fifo queue;
    struct fifo todo; /* requests to continue after the current event (see model_defer) */
    /* gauges every model reports (the report, the series): 0 where a model has none */
    int32_t vt_alive, vt_parked, vt_pinned, carriers_busy;
    /* downstream */
    struct svc_state svc[MAX_SERVICES];
    /* workload */
    uint32_t *user_iter;     /* closed loop: requests each user has sent */
    uint64_t rampup_seq;     /* closed loop: user u's first arrival's insertion order - u */
    uint64_t arrival_index;  /* open loop: requests generated */
    uint64_t arrival_rng[4]; /* open loop: xoshiro256** state for inter-arrival gaps */
    uint32_t next_req_id;
    struct wl_waiters *waiters; /* closed loop: refused users waiting for a connection (I.12) */
    /* time series, kept only for what draws or writes it (the window, --series, --live) */
    int keep_series; /* set by the caller after model_init; 0: no rows, no interval stats */
    struct sample *series;
    int32_t nseries, capseries;
    struct stats stats;
    /* engine bookkeeping */
    simtime last_t;
    uint64_t same_t_events;
    int stuck; /* 1: time stopped advancing (see model_step) */
    /* an observer of the threads (the Chrome trace, IV.2), NULL: none. thr_set calls it as
     * thread t leaves `state`, held from `from` to `to`; `observer` is the observer's own. */
    void (*on_span)(const struct model *, int32_t t, int state, simtime from, simtime to);
    void *observer;
    /* each model's own state: only its section reads it (I.3, I.4) */
    struct {
        int32_t waking; /* idle threads signalled, not yet running */
    } plat;
    struct {
        int32_t compensating;             /* carriers blocked in io(), compensated for */
        const struct vt_sched_ops *sched; /* virtual.scheduler's policy */
        /* steal, home: carrier t's own run queue is runq[t], t < nrunq (the rest are empty);
         * apart from thr[] so that fifo's threads stay small */
        struct fifo *runq;
        int32_t nrunq;
        int32_t queued;     /* in the carriers' own run queues; `queue` holds fifo's */
        uint32_t next_home; /* round robin: the base carrier a new virtual thread is spread to */
    } vt;
};

/* Declared ahead: the lesson (I.1 to I.6) comes first and calls the machine the models share
 * (I.7 to I.9), the engine's bookkeeping (I.10) and the tools (Part II), defined after it. */
static void req_continue(struct model *m, int32_t r);
static void req_finish(struct model *m, int32_t r);
static void req_wake_one(struct model *m, int32_t r);
static void conn_admit(struct model *m, int32_t r);
static void wl_next(struct model *m, int32_t r);
static int wl_wait(struct model *m, int32_t user);
static void wl_wake(struct model *m);
static void wl_woken_arrives(struct model *m, const struct event *e);
static void wl_settle(struct model *m);
static void wl_note(struct model *m, simtime t);
static void model_free_more(struct model *m);
static void plat_thread_free(struct model *m, int32_t t);
static void model_spawn_idle(struct model *m, int n);
static void cpu_want(struct model *m, int32_t t, simtime ns);
static void cpu_yield(struct model *m, int32_t t, simtime ns);
static void cpu_burst_end(struct model *m, const struct event *e);
static void thr_set(struct model *m, int32_t t, int state);
static int32_t thr_spawn(struct model *m, int extra);
static void thr_exit(struct model *m, int32_t t);
static void thr_unidle(struct model *m, int32_t t);
static void thr_idle_timer(struct model *m, int32_t t, simtime after);
static void thr_idle_timer_fired(struct model *m, int32_t t);
static int svc_call(struct model *m, int32_t r, int svc, simtime latency);
static void svc_count_failed(struct model *m, const struct req *req);
static void svc_done(struct model *m, const struct event *e);
static void svc_shed(struct model *m, const struct event *e);
static void svc_expire(struct model *m, struct svc_state *v);
static void svc_tw_alloc(struct tw_ring *q, int32_t cap);
static int32_t svc_peer_tuples(const struct scenario *s);
static void model_batch_add(struct batch *b, uint64_t lat);
static void model_peaks(struct model *m);
static void model_sample(struct model *m, const struct event *e);
static void model_batch(struct model *m, const struct event *e);
static uint64_t rng_key(uint64_t seed, uint64_t a, uint64_t b);
static uint64_t rng_xoshiro(uint64_t s[4]);
static void rng_xoshiro_seed(uint64_t s[4], uint64_t seed);
static double rng_unit(uint64_t x);
static simtime dist_sample(const struct dist *d, uint64_t *rng);
static void hist_add(struct hist *h, uint64_t v);
static uint64_t hist_quantile(const struct hist *h, double q);
static struct hist *hist_new(void);
static void hist_clear(struct hist *h);
static void evq_push(struct evq *q, simtime t, int type, uint32_t a, uint32_t b);
static void evq_push_lane(struct evq *q, int lane, simtime t, int type, uint32_t a, uint32_t b);
static uint64_t evq_reserve(struct evq *q, uint64_t n);
static void evq_push_keyed(struct evq *q, simtime t, uint64_t seq, int type, uint32_t a,
                           uint32_t b);
static void evq_push_lane_keyed(struct evq *q, int lane, simtime t, uint64_t seq, int type,
                                uint32_t a, uint32_t b);
static const struct event *evq_peek(const struct evq *q, int *from);
static const struct event *evq_head(const struct evq *q, int from);
static struct event evq_pop_from(struct evq *q, int from);
static void evq_free(struct evq *q);
static int ev_type_of(const struct event *e);
static void *xrealloc(void *p, size_t n, size_t size);
static int32_t slot_take(void **arr, int32_t *n, int32_t *cap, int32_t *freelist, size_t size);
static void slot_give(void *arr, int32_t *freelist, size_t size, int32_t i);
/* Inlined wherever called: GCC sees no side effect in a function that only prefetches, and
 * drops a call to it as dead code. */
#define PREFETCH_FN static inline __attribute__((always_inline))
PREFETCH_FN void fifo_prefetch(const void *base, size_t size, int32_t i);
PREFETCH_FN void model_prefetch(const struct model *m, const struct event *e);
static void fifo_push(struct fifo *q, void *base, size_t size, int32_t i);
static int32_t fifo_pop(struct fifo *q, void *base, size_t size);
static int32_t req_alloc(struct model *m);
static int32_t call_alloc(struct model *m);
static void call_free(struct model *m, int32_t c);

/* ---- I.2 Request interpreter ---- */

/* The interpreter both models share. It runs request r as far as it can without waiting:
 * sync markers are instant; CPU work (a step, or overhead owed as `debt`) goes to the
 * request's thread via cpu_want; I/O goes to the services and the model blocks the request.
 * It is called again when the burst ends or the I/O completes, and picks up at `phase`. */

/* A calibrated CPU cost as paid now. Every request in service keeps state the CPU touches
 * on each step (sockets and their buffers, connection structs, a virtual thread's frames);
 * the more there are, the less of it stays in the caches and the more each step costs. */
static simtime cpu_cost(const struct model *m, simtime base)
{
    if (base == 0 || m->s->cache_pressure == 0)
        return base; /* the common case, without asking the model */
    return base + (simtime)((double)base * m->s->cache_pressure * m->ops->in_service(m));
}

static void req_issue(struct model *m, int32_t r, const struct step *step)
{
    struct req *req = &m->req[r];
    req->phase = PH_WAIT;
    if (step->op == OP_IO) {
        req->pending = 1;
        evq_push(&m->events, m->now + dist_sample(&step->d, &req->rng), EV_IO_STEP_DONE,
                 (uint32_t)r, 0);
        m->ops->block(m, r, OP_IO);
        return;
    }
    simtime lat[MAX_PAR];
    const struct dist *net = &m->s->call_latency;
    int net_random =
        net->shape != DIST_CONST || net->a != 0; /* no draw when absent: streams unchanged */
    for (int i = 0; i < step->nsvc; i++) /* sample first, in program order: common random numbers */
        lat[i] = dist_sample(&m->s->svc[step->svc[i]].latency, &req->rng) +
                 (net_random ? dist_sample(net, &req->rng) : 0);
    req->pending = step->nsvc;
    for (int i = 0; i < step->nsvc; i++) {
        int why = svc_call(m, r, step->svc[i], lat[i]);
        if (why != FAIL_NONE) {
            req = &m->req[r];
            req->pending--;
            if (req->fail == FAIL_NONE)
                req->fail = (int8_t)why;
        }
    }
    req = &m->req[r];
    if (req->pending)
        m->ops->block(m, r, step->op);
}

static void req_continue(struct model *m, int32_t r)
{
    const struct scenario *s = m->s;
    for (;;) {
        struct req *req = &m->req[r];
        if (req->fail != FAIL_NONE || req->phase == PH_RELEASE) {
            req_finish(m, r);
            return;
        }
        const struct step *step = req->pc < s->nsteps ? &s->prog[req->pc] : NULL;
        switch (req->phase) {
        case PH_CPU:
        case PH_WAIT: /* the step is over */
            req->phase = PH_START;
            req->pc++;
            continue;
        case PH_PREBLOCK: /* the model's overhead is paid: start the I/O */
            req_issue(m, r, step);
            if (m->req[r].pending)
                return;
            continue;
        }
        /* PH_START: pay overhead owed (creation, unpark) first; a CPU step absorbs it */
        if (req->debt > 0 && (!step || step->op != OP_CPU)) {
            simtime d = req->debt;
            req->debt = 0;
            cpu_want(m, req->thr, d);
            return;
        }
        if (!step) {
            req_finish(m, r);
            return;
        }
        switch (step->op) {
        case OP_SYNC_BEGIN:
            req->sync_depth++;
            req->pc++;
            continue;
        case OP_SYNC_END:
            req->sync_depth--;
            req->pc++;
            continue;
        case OP_CPU: {
            simtime d = dist_sample(&step->d, &req->rng) + req->debt;
            req->debt = 0;
            req->phase = PH_CPU;
            if (d > 0) {
                cpu_want(m, req->thr, d);
                return;
            }
            continue;
        }
        default: { /* a blocking step: the model may charge CPU first (parking) */
            simtime d =
                m->ops->block_cost(m, r, step->op) + step->nsvc * cpu_cost(m, m->cpu_per_call);
            req->phase = PH_PREBLOCK;
            if (d > 0) {
                cpu_want(m, req->thr, d);
                return;
            }
            continue;
        }
        }
    }
}

/* Continue r once the current event is handled. Handing a thread to the next request from
 * inside another request's end would otherwise recurse once per queued request. */
static void model_defer(struct model *m, int32_t r)
{
    FIFO_PUSH(&m->todo, m->req, r);
}

/* One of r's calls (or its io step) completed. */
static void req_wake_one(struct model *m, int32_t r)
{
    if (--m->req[r].pending == 0)
        m->ops->wake(m, r);
}

static void model_io_step_done(struct model *m, const struct event *e)
{
    req_wake_one(m, (int32_t)e->a);
}

/* r is answered (or failed): count it. */
static void req_count(struct model *m, int32_t r)
{
    struct req *req = &m->req[r];
    struct stats *stats = &m->stats;
    m->in_flight--;
    if (req->fail != FAIL_NONE) {
        stats->failed[req->fail]++;
        svc_count_failed(m, req); /* its latency, for the fan-out's report (I.9) */
    } else {
        stats->completed++;
        if (m->now >= m->s->warmup) {
            uint64_t lat = (uint64_t)(m->now - req->arrived);
            stats->completed_window++;
            hist_add(stats->lat, lat);
            stats->lat_sum += (double)lat;
            if (m->keep_series) /* only the series' p99 reads it */
                hist_add(stats->lat_interval, lat);
            if (stats->nbatch)
                model_batch_add(&stats->batch[stats->cur_batch], lat);
        }
        stats->interval_done++;
    }
}

/* r's thread and connection are free: the next request in the backlog may have them. */
static void req_free(struct model *m, int32_t r, int user_goes_on)
{
    if (m->req[r].thr >= 0)
        m->ops->release(m, r);
    if (m->req[r].admitted) {
        int32_t next;
        m->conns--;
        if ((next = FIFO_POP(&m->backlog, m->req)) >= 0)
            conn_admit(m, next);
        if (m->waiters) /* a connection or a place in the backlog is free: I.12 */
            wl_wake(m);
    }
    if (user_goes_on)
        wl_next(m, r);
    slot_give(m->req, &m->free_req, sizeof *m->req, r);
}

/* r leaves the server, answered or failed: count it, free its thread and connection, and
 * let its user think about the next one. A pool thread with `platform.release_cpu` to run
 * stays busy after the answer is out, while the user already sends the next request:
 * Tomcat's TaskQueue then sees no idle thread and grows the pool, which is why a real pool
 * ends up with more threads than users in flight. */
static void req_finish(struct model *m, int32_t r)
{
    struct req *req = &m->req[r];
    if (req->phase == PH_RELEASE) {
        req_free(m, r, 0);
        return;
    } /* the thread is back */
    req_count(m, r);
    if (req->thr >= 0 && m->release_cpu > 0) {
        wl_next(m, r);
        req->phase = PH_RELEASE;
        cpu_yield(m, req->thr, m->release_cpu);
        return;
    }
    req_free(m, r, 1);
}

/* The connector: maxConnections held at once, then the kernel's listen backlog of
 * acceptCount, then refusal. Tomcat keeps these limits with virtual threads too. */
static void conn_admit(struct model *m, int32_t r)
{
    m->conns++;
    m->req[r].admitted = 1;
    m->req[r].debt += cpu_cost(m, m->cpu_per_request);
    m->ops->admit(m, r);
}

static void conn_arrive(struct model *m, int32_t r)
{
    if (m->conns < m->s->max_connections)
        conn_admit(m, r);
    else if (m->backlog.len < m->s->accept_count)
        FIFO_PUSH(&m->backlog, m->req, r);
    else {
        m->req[r].fail = FAIL_REFUSED;
        req_finish(m, r);
    }
}

/* ---- I.3 Platform model ---- */

/* Tomcat's executor (a ThreadPoolExecutor): an idle thread takes the request; if none is
 * idle the pool grows, one thread per request, up to maxThreads; beyond that requests wait
 * in the executor's queue. The thread then holds the request, blocked or not, to its end. */

static int32_t plat_pool_size(const struct model *m)
{
    return m->threads_alive;
}

static void plat_assign(struct model *m, int32_t t, int32_t r)
{
    m->thr[t].req = r;
    m->thr[t].idle_gen++;
    m->req[r].thr = t;
    model_defer(m, r);
}

/* Tomcat's TaskQueue rule: a request joins the executor's queue, and when more requests
 * are queued than threads are idle (or being woken), the pool grows by a thread, which
 * takes the oldest one once it has started. Otherwise an idle thread is signalled; it runs
 * `os.wakeup_latency` later. Requests arriving while threads start or wake see the queue
 * longer than the idle threads and grow the pool again: a burst grows it past the number
 * of requests in flight, as on a real server. */
static void plat_admit(struct model *m, int32_t r)
{
    const struct scenario *s = m->s;
    if (s->max_queue && m->queue.len >= s->max_queue) {
        m->req[r].fail = FAIL_REJECTED; /* 503 */
        model_defer(m, r);
        return;
    }
    FIFO_PUSH(&m->queue, m->req, r);
    if (m->queue.len > m->idle.len + m->plat.waking && plat_pool_size(m) < s->max_threads) {
        int32_t t = thr_spawn(m, 0); /* it starts (thread_create of CPU), then takes the oldest */
        if (s->thread_create > 0)
            cpu_want(m, t, s->thread_create);
        else
            plat_thread_free(m, t);
        return;
    }
    int32_t t = FIFO_POP(&m->idle, m->thr);
    if (t < 0)
        return; /* every thread is busy or already signalled: it waits */
    m->thr[t].idle_gen++;
    m->plat.waking++;
    evq_push_lane(&m->events, EVQ_WAKEUPS, m->now + s->wakeup_latency, EV_THREAD_WAKE, (uint32_t)t,
                  0);
}

/* EV_THREAD_WAKE: a signalled pool thread runs and takes the oldest queued request. */
static void plat_thread_wake(struct model *m, const struct event *e)
{
    m->plat.waking--;
    plat_thread_free(m, (int32_t)e->a);
}

static simtime plat_block_cost(struct model *m, int32_t r, int op)
{
    (void)m;
    (void)r;
    (void)op;
    return 0;
}

/* A blocking socket read: the OS thread sleeps in the kernel, holding its stack. */
static void plat_block(struct model *m, int32_t r, int op)
{
    (void)op;
    thr_set(m, m->req[r].thr, THR_BLOCKED);
}

/* The kernel wakes the thread: it needs a core again before it can go on. */
static void plat_wake(struct model *m, int32_t r)
{
    m->req[r].debt += m->s->wakeup;
    req_continue(m, r);
}

static void plat_idle(struct model *m, int32_t t)
{
    thr_set(m, t, THR_IDLE);
    FIFO_PUSH(&m->idle, m->thr, t);
    if (plat_pool_size(m) > m->s->min_spare)
        thr_idle_timer(m, t, m->s->idle_timeout);
}

/* The thread is free: the next queued request, or the idle list. */
static void plat_thread_free(struct model *m, int32_t t)
{
    int32_t next = FIFO_POP(&m->queue, m->req);
    if (next >= 0)
        plat_assign(m, t, next);
    else
        plat_idle(m, t);
}

static void plat_release(struct model *m, int32_t r)
{
    int32_t t = m->req[r].thr;
    m->thr[t].served++;
    m->thr[t].req = -1;
    m->req[r].thr = -1;
    plat_thread_free(m, t);
}

/* Requests being served: those holding a pool thread. A queued request is not in service. */
static int32_t plat_in_service(const struct model *m)
{
    return m->threads_alive - m->idle.len;
}

/* The executor's queue holds requests, not virtual threads. */
static int32_t plat_runnable(const struct model *m)
{
    (void)m;
    return 0;
}

/* An idle pool thread past its idle timeout exits, down to minSpareThreads. */
static int plat_may_retire(const struct model *m, int32_t t)
{
    (void)t;
    return plat_pool_size(m) > m->s->min_spare;
}

/* A pool thread runs its request from the connector to the answer and then releases
 * (platform.release_cpu); after each blocking step the kernel wakes it (os.wakeup). Every
 * step holds the thread, one of maxThreads. */
static simtime plat_request_cpu(const struct model *m)
{
    return m->release_cpu;
}

static simtime plat_step_cpu(const struct model *m, int op, int in_sync)
{
    (void)op;
    (void)in_sync;
    return m->s->wakeup;
}

static int32_t plat_holders(const struct model *m, int op, int in_sync)
{
    (void)op;
    (void)in_sync;
    return m->s->max_threads;
}

/* minSpareThreads exist from the start; a pool thread releases (platform.release_cpu). */
static void plat_init(struct model *m)
{
    m->release_cpu = m->s->release_cpu;
    model_spawn_idle(m, m->s->min_spare);
}

static void plat_fini(struct model *m)
{
    (void)m;
}

/* Requests waiting for a thread: the executor's queue. */
static int32_t plat_queued(const struct model *m)
{
    return m->queue.len;
}

static const struct model_words plat_words = {
    .title = "PLATFORM THREADS (1:1, a Tomcat pool)",
    .thr_prefix = "T",
    .req_prefix = "req",
    .worker = "thread",
    .thread = "OS thread",
    .threads = "pool threads",
    .queue = "executor queue for a thread",
};

/* A request waiting on I/O blocks its thread; the arrivals' box shows the kernel's accept
 * backlog (the executor's queue has the lot below the threads). */
static void plat_view(const struct model *m, struct model_view *v)
{
    *v = (struct model_view){.on_io = m->thr_state_n[THR_BLOCKED], .busy = -1, .nbox = 1};
    v->box[0] = &m->backlog;
    snprintf(v->label, sizeof v->label, "accept backlog: %d", m->backlog.len);
}

/* A pool thread has no run queue of its own. */
static const struct fifo *plat_thread_runq(const struct model *m, int32_t t)
{
    (void)m;
    (void)t;
    return NULL;
}

static int32_t plat_queued_at(const struct model *m, int32_t r)
{
    (void)m;
    (void)r;
    return -1;
}

static const struct model_ops plat_ops = {
    .admit = plat_admit,
    .block_cost = plat_block_cost,
    .block = plat_block,
    .wake = plat_wake,
    .release = plat_release,
    .thread_free = plat_thread_free,
    .in_service = plat_in_service,
    .runnable = plat_runnable,
    .may_retire = plat_may_retire,
    .request_cpu = plat_request_cpu,
    .step_cpu = plat_step_cpu,
    .holders = plat_holders,
    .init = plat_init,
    .fini = plat_fini,
    .thread_wake = plat_thread_wake,
    .queued = plat_queued,
    .words = &plat_words,
    .view = plat_view,
    .thread_runq = plat_thread_runq,
    .queued_at = plat_queued_at,
    .interruptible = 0,
};

/* ---- I.4 Virtual model ---- */

/* Loom: every request gets a new virtual thread, made runnable for `parallelism` carriers
 * (the ForkJoinPool in async mode). A blocking socket call unmounts it: the continuation
 * yields, its frames are kept on the heap, and the carrier runs the next one. When the
 * poller sees the socket ready, the thread is unparked and runnable again. Inside
 * `synchronized` it cannot unmount (JDK 21): it pins the carrier, which blocks with it.
 *
 * THE SCHEDULER (virtual.scheduler): where a runnable virtual thread waits for a carrier.
 *   steal  Loom's ForkJoinPool: each carrier has its own work queue, which it takes FIFO
 *          (asyncMode); a carrier that runs dry scans the others' queues and steals the
 *          oldest task, from the base, before it parks; a task submitted while carriers
 *          sleep signals one (signalWork), which steals it. A virtual thread goes back to
 *          its home, the carrier it last ran on (whose epoll saw its event; a new one is
 *          spread round robin), mounted at once if that carrier is idle, else by an idle
 *          carrier, else queued at home. Work conserving: no carrier idles while a thread
 *          waits (so M/M/c holds for exponential CPU, tests/test_sim.c checks it).
 *   fifo   one queue for all carriers (a simpler scheduler than Loom's).
 *   home   a queue per carrier and no stealing: a thread runs only on the carrier it was
 *          spread to at its start (a runtime whose copied stacks cannot move),
 *          so one carrier idles while another's queue is long. A compensating carrier (io())
 *          owns no threads: it takes the oldest of the first queue that has one.
 * Invariant: a carrier idle in m->idle has an empty queue, and vt_queued counts them all. */
struct vt_sched_ops {
    void (*ready)(struct model *, int32_t r);   /* r can run: a carrier mounts it or it waits */
    int32_t (*next)(struct model *, int32_t c); /* the thread free carrier c runs next, or -1 */
};

static void vt_mount(struct model *m, int32_t c, int32_t r)
{
    m->thr[c].req = r;
    m->thr[c].idle_gen++;
    m->req[r].thr = c;
    m->carriers_busy++;
    model_defer(m, r);
}

static void vt_carrier_free(struct model *m, int32_t c)
{
    int32_t r = m->vt.sched->next(m, c);
    if (r >= 0) {
        vt_mount(m, c, r);
        return;
    }
    thr_set(m, c, THR_IDLE);
    FIFO_PUSH(&m->idle, m->thr, c);
    if (m->thr[c].extra)
        thr_idle_timer(m, c, m->s->carrier_keepalive);
}

/* fifo: one queue; idle carriers take from it in turn. */
static void vt_kick(struct model *m)
{
    int32_t c;
    while (m->queue.len && (c = FIFO_POP(&m->idle, m->thr)) >= 0)
        vt_mount(m, c, FIFO_POP(&m->queue, m->req));
}

static void vt_fifo_ready(struct model *m, int32_t r)
{
    FIFO_PUSH(&m->queue, m->req, r);
    vt_kick(m);
}

static int32_t vt_fifo_next(struct model *m, int32_t c)
{
    (void)c;
    return FIFO_POP(&m->queue, m->req);
}

/* steal and home: r's home carrier. A new thread, or one whose carrier has retired, is
 * spread round robin over the `parallelism` carriers (slots 0..parallelism-1, made first
 * by model_init, never retire), as the runtime spreads new threads. */
static int32_t vt_home(struct model *m, int32_t r)
{
    int32_t h = m->req[r].home;
    if (h < 0 || !m->thr[h].alive)
        h = m->req[r].home = (int32_t)(m->vt.next_home++ % (uint32_t)m->s->parallelism);
    return h;
}

static int vt_carrier_idle(const struct model *m, int32_t c)
{
    return m->thr[c].req < 0 && m->thr[c].state == THR_IDLE;
}

/* Carrier c, idle, mounts r (it leaves the idle list from wherever it is in it). */
static void vt_wake_carrier(struct model *m, int32_t c, int32_t r)
{
    thr_unidle(m, c);
    vt_mount(m, c, r);
}

static void vt_enqueue(struct model *m, int32_t c, int32_t r)
{
    if (c >= m->vt.nrunq) {
        int32_t n = m->nthr > c + 1 ? m->nthr : c + 1;
        m->vt.runq = xrealloc(m->vt.runq, (size_t)n, sizeof *m->vt.runq);
        while (m->vt.nrunq < n)
            m->vt.runq[m->vt.nrunq++] = FIFO_EMPTY;
    }
    FIFO_PUSH(&m->vt.runq[c], m->req, r);
    if (++m->vt.queued > m->stats.peak_queued) /* the only place their sum grows */
        m->stats.peak_queued = m->vt.queued;
}

static int32_t vt_dequeue(struct model *m, int32_t c)
{
    int32_t r = c < m->vt.nrunq ? FIFO_POP(&m->vt.runq[c], m->req) : -1;
    m->vt.queued -= r >= 0;
    return r;
}

/* steal: home if idle; else any idle carrier (all queues are empty then, so the one it
 * would steal is r), its home from now on; else r waits at home. */
static void vt_steal_ready(struct model *m, int32_t r)
{
    int32_t h = vt_home(m, r), c;
    if (vt_carrier_idle(m, h))
        vt_wake_carrier(m, h, r);
    else if ((c = FIFO_POP(&m->idle, m->thr)) >= 0) {
        m->req[r].home = c;
        vt_mount(m, c, r);
    } else
        vt_enqueue(m, h, r);
}

/* Its own queue's oldest, else the oldest of the first non-empty queue after it, which
 * makes c its home (its next unpark comes from c's poller). The JDK scans from a random
 * queue; starting at the next carrier keeps runs reproducible. */
static int32_t vt_steal_next(struct model *m, int32_t c)
{
    int32_t r = vt_dequeue(m, c);
    if (r >= 0 || m->vt.queued == 0)
        return r;
    for (int32_t i = 0; i < m->vt.nrunq; i++) { /* a retired carrier's slot has an empty one */
        int32_t v = (c + 1 + i) % m->vt.nrunq;
        if (m->vt.runq[v].len) {
            r = vt_dequeue(m, v);
            if (m->s->vt_sched == VT_STEAL) /* home keeps its home (an extra helps, io()) */
                m->req[r].home = c;
            return r;
        }
    }
    return -1;
}

/* home: mounted at home if it is idle, else queued there, whoever else is idle. */
static void vt_home_ready(struct model *m, int32_t r)
{
    int32_t h = vt_home(m, r);
    if (vt_carrier_idle(m, h))
        vt_wake_carrier(m, h, r);
    else
        vt_enqueue(m, h, r);
}

static int32_t vt_home_next(struct model *m, int32_t c)
{
    return m->thr[c].extra ? vt_steal_next(m, c) : vt_dequeue(m, c);
}

static const struct vt_sched_ops vt_scheds[VT_NPOLICY] = {
    [VT_STEAL] = {vt_steal_ready, vt_steal_next},
    [VT_FIFO] = {vt_fifo_ready, vt_fifo_next},
    [VT_HOME] = {vt_home_ready, vt_home_next},
};

static void vt_admit(struct model *m, int32_t r)
{
    m->vt_alive++;
    m->req[r].debt += m->s->vt_create;
    m->vt.sched->ready(m, r);
}

/* Does blocking in this step pin the carrier? Socket I/O inside synchronized does (JDK 21-23). */
static int vt_pins_in(const struct model *m, int op, int in_sync)
{
    return op != OP_IO && in_sync && !m->s->jep491;
}

static int vt_pins(const struct model *m, int32_t r, int op)
{
    return vt_pins_in(m, op, m->req[r].sync_depth > 0);
}

static simtime vt_block_cost(struct model *m, int32_t r, int op)
{
    return op == OP_IO || vt_pins(m, r, op) ? 0 : m->s->vt_park;
}

/* io(): the JDK compensates for this blocking by adding a carrier, up to maxPoolSize, so
 * that `parallelism` carriers stay available. */
static void vt_compensate(struct model *m)
{
    const struct scenario *s = m->s;
    m->vt.compensating++;
    if (m->threads_alive - m->vt.compensating < s->parallelism &&
        m->threads_alive < s->max_pool_size) {
        int32_t c = thr_spawn(m, 1);
        m->stats.busy_ns += s->thread_create; /* charged, not scheduled: it is short and rare */
        vt_carrier_free(m, c);
    }
}

static void vt_block(struct model *m, int32_t r, int op)
{
    struct req *req = &m->req[r];
    int32_t c = req->thr;
    if (op == OP_IO || vt_pins(m, r, op)) { /* the carrier blocks with the virtual thread mounted */
        req->pinned = 1;
        thr_set(m, c, THR_BLOCKED);
        if (op == OP_IO)
            vt_compensate(m);
        else
            m->vt_pinned++;
        return;
    }
    req->parked = 1;
    req->thr = -1;
    m->vt_parked++;
    m->stats.parks++;
    m->thr[c].req = -1;
    m->carriers_busy--;
    vt_carrier_free(m, c);
}

static void vt_wake(struct model *m, int32_t r)
{
    struct req *req = &m->req[r];
    if (req->parked) { /* unpark: queue it for a carrier again */
        req->parked = 0;
        m->vt_parked--;
        req->debt += m->s->vt_unpark;
        m->vt.sched->ready(m, r);
        return;
    }
    req->pinned = 0;
    if (m->s->prog[req->pc].op == OP_IO)
        m->vt.compensating--;
    else
        m->vt_pinned--;
    req_continue(m, r);
}

static void vt_release(struct model *m, int32_t r)
{
    int32_t c = m->req[r].thr;
    m->thr[c].served++;
    m->thr[c].req = -1;
    m->req[r].thr = -1;
    m->carriers_busy--;
    m->vt_alive--;
    vt_carrier_free(m, c);
}

/* Requests being served: every virtual thread, mounted, runnable or parked. */
static int32_t vt_in_service(const struct model *m)
{
    return m->vt_alive;
}

/* The run queues: virtual threads waiting for a carrier. */
static int32_t vt_runnable(const struct model *m)
{
    return m->queue.len + m->vt.queued;
}

/* Only a compensating carrier retires after its keepalive, and never below parallelism. */
static int vt_may_retire(const struct model *m, int32_t t)
{
    return m->thr[t].extra && m->threads_alive > m->s->parallelism;
}

/* A virtual thread costs its start; a step that parks costs the park and the unpark; a
 * carrier holds the request only through CPU (one of `parallelism`), a pinned wait (the
 * same carriers) or io() (compensated: up to max_pool_size). */
static simtime vt_request_cpu(const struct model *m)
{
    return m->s->vt_create;
}

static simtime vt_step_cpu(const struct model *m, int op, int in_sync)
{
    return op == OP_IO || vt_pins_in(m, op, in_sync) ? 0 : m->s->vt_park + m->s->vt_unpark;
}

static int32_t vt_holders(const struct model *m, int op, int in_sync)
{
    if (op == OP_CPU || vt_pins_in(m, op, in_sync))
        return m->s->parallelism;
    return op == OP_IO ? m->s->max_pool_size : 0;
}

/* `parallelism` carriers exist from the start, under virtual.scheduler's policy. */
static void vt_init(struct model *m)
{
    m->vt.sched = &vt_scheds[m->s->vt_sched];
    model_spawn_idle(m, m->s->parallelism);
}

static void vt_fini(struct model *m)
{
    free(m->vt.runq);
}

/* Never queued: a virtual thread's carrier is never signalled to wake (vt_mount runs it). */
static void vt_thread_wake(struct model *m, const struct event *e)
{
    (void)m;
    (void)e;
}

static const struct model_words vt_words = {
    .title = "VIRTUAL THREADS (M:N, Loom)",
    .thr_prefix = "C",
    .req_prefix = "VT",
    .worker = "carrier",
    .thread = "carrier",
    .threads = "carriers",
    .queue = "run queue for a carrier",
    .dashed = 1,
    .ink = 1,
    .parks = 1,
    .req_thread = 1,
    .blocked_pins = 1,
};

/* Parked virtual threads wait on I/O; the arrivals' box holds every runnable one: the
 * accept backlog, the shared run queue (fifo), then each carrier's own (steal, home). */
static void vt_view(const struct model *m, struct model_view *v)
{
    *v = (struct model_view){
        .on_io = m->vt_parked, .busy = m->carriers_busy, .nbox = 2, .box_own = m->vt.queued};
    v->box[0] = &m->backlog;
    v->box[1] = &m->queue;
    snprintf(v->label, sizeof v->label, "run queue%s: %d%s", m->s->vt_sched == VT_FIFO ? "" : "s",
             vt_runnable(m) + m->backlog.len, m->backlog.len ? " (some in backlog)" : "");
}

/* A runnable virtual thread waits in its home carrier's own queue (steal, home). */
static const struct fifo *vt_thread_runq(const struct model *m, int32_t c)
{
    return c < m->vt.nrunq ? &m->vt.runq[c] : NULL;
}

static int32_t vt_queued_at(const struct model *m, int32_t r)
{
    return m->s->vt_sched != VT_FIFO && m->req[r].home >= 0 ? m->req[r].home : -1;
}

static const struct model_ops vt_ops = {
    .admit = vt_admit,
    .block_cost = vt_block_cost,
    .block = vt_block,
    .wake = vt_wake,
    .release = vt_release,
    .thread_free = vt_carrier_free,
    .in_service = vt_in_service,
    .runnable = vt_runnable,
    .may_retire = vt_may_retire,
    .request_cpu = vt_request_cpu,
    .step_cpu = vt_step_cpu,
    .holders = vt_holders,
    .init = vt_init,
    .fini = vt_fini,
    .thread_wake = vt_thread_wake,
    .queued = vt_runnable,
    .words = &vt_words,
    .view = vt_view,
    .thread_runq = vt_thread_runq,
    .queued_at = vt_queued_at,
    .interruptible = 1,
};

/* ---- I.5 Workload ---- */

/* Closed loop: N users, each sending a request, waiting for the answer, thinking, and
 * sending the next. Open loop: Poisson arrivals at `rate`, whatever the server does. A
 * request's random stream is keyed by (user, iteration) or by its arrival index, so both
 * models draw the same service times for the same request. */

/* Users start evenly spread over the ramp-up, in user order. User u's first arrival is
 * queued when user u - 1's is handled (it is no earlier), with the insertion order it
 * would have had pushed with all the others at the start (rampup_seq + u): the same run,
 * with one queued first arrival instead of 24 bytes per user. */
static void wl_first_arrival(struct model *m, long u)
{
    const struct scenario *s = m->s;
    if (u < s->users)
        evq_push_lane_keyed(&m->events, EVQ_RAMPUP,
                            (simtime)((double)s->rampup * (double)u / (double)s->users),
                            m->rampup_seq + (uint64_t)u, EV_ARRIVE, (uint32_t)u, 0);
}

static void wl_start(struct model *m)
{
    const struct scenario *s = m->s;
    if (s->users > 0) {
        m->user_iter = xrealloc(NULL, (size_t)s->users, sizeof *m->user_iter);
        memset(m->user_iter, 0, (size_t)s->users * sizeof *m->user_iter);
        m->rampup_seq = evq_reserve(&m->events, (uint64_t)s->users);
        wl_first_arrival(m, 0);
    } else {
        rng_xoshiro_seed(m->arrival_rng, rng_key(s->seed, UINT64_MAX, 0));
        evq_push(&m->events, (simtime)(-log(rng_unit(rng_xoshiro(m->arrival_rng))) / s->rate * SEC),
                 EV_ARRIVE, 0, 0);
    }
}

static void wl_arrive(struct model *m, const struct event *e)
{
    const struct scenario *s = m->s;
    uint64_t key;
    int32_t user = -1;
    wl_woken_arrives(m, e);
    if (s->users > 0 && m->user_iter[e->a] == 0) /* a first arrival: the next user's is due */
        wl_first_arrival(m, (long)e->a + 1);
    if (m->now >= s->duration)
        return;
    if (s->users > 0) {
        user = (int32_t)e->a;
        key = rng_key(s->seed, (uint64_t)user, m->user_iter[user]++);
    } else {
        key = rng_key(s->seed, (uint64_t)1 << 40, m->arrival_index++);
        simtime gap = (simtime)(-log(rng_unit(rng_xoshiro(m->arrival_rng))) / s->rate * SEC);
        evq_push_lane(&m->events, EVQ_ARRIVALS, m->now + gap, EV_ARRIVE, 0, 0);
    }
    int32_t r = req_alloc(m);
    m->req[r] = (struct req){.next = -1,
                             .thr = -1,
                             .user = user,
                             .fail = FAIL_NONE,
                             .rng = key,
                             .arrived = m->now,
                             .calls = -1,
                             .id = ++m->next_req_id,
                             .home = -1};
    m->stats.arrived++;
    m->in_flight++;
    conn_arrive(m, r);
}

/* After r ends, its user thinks (and, after a failure, backs off) before the next one. */
static void wl_next(struct model *m, int32_t r)
{
    const struct scenario *s = m->s;
    const struct req *req = &m->req[r];
    if (req->user < 0)
        return;
    if (req->fail == FAIL_REFUSED && wl_wait(m, req->user))
        return; /* it tries again when a connection is free: I.12 */
    uint64_t think_rng =
        rng_key(s->seed ^ 0x7468696e6bull, (uint64_t)req->user, m->user_iter[req->user] - 1);
    simtime delay =
        dist_sample(&s->think, &think_rng) + (req->fail != FAIL_NONE ? s->retry_after : 0);
    evq_push_lane(&m->events, EVQ_ARRIVALS, m->now + delay, EV_ARRIVE, (uint32_t)req->user, 0);
}

/* ---- I.6 Engine ---- */

/* EV_IDLE_CHECK: a thread idle since generation b may retire (pool shrink, carrier keepalive).
 * A later idle period's check, noted while this one was queued, is queued now. */
static void model_idle_check(struct model *m, const struct event *e)
{
    int32_t t = (int32_t)e->a;
    struct thr *th = &m->thr[t];
    thr_idle_timer_fired(m, t);
    if (!th->alive || th->state != THR_IDLE || th->idle_gen != e->b || th->req >= 0)
        return;
    if (!m->ops->may_retire(m, t))
        return;
    thr_unidle(m, t);
    thr_exit(m, t);
}

/* EV_THREAD_WAKE: a thread the model signalled runs (the platform's pool, plat_admit). */
static void model_thread_wake(struct model *m, const struct event *e)
{
    m->ops->thread_wake(m, e);
}

typedef void (*ev_handler)(struct model *, const struct event *);
static const ev_handler ev_handlers[] = {
    [EV_ARRIVE] = wl_arrive,
    [EV_BURST_END] = cpu_burst_end,
    [EV_IO_DONE] = svc_done,
    [EV_IO_STEP_DONE] = model_io_step_done,
    [EV_IDLE_CHECK] = model_idle_check,
    [EV_SAMPLE] = model_sample,
    [EV_THREAD_WAKE] = model_thread_wake,
    [EV_BATCH] = model_batch,
    [EV_SHED] = svc_shed,
};

/* The models, by enum model_id: what model_init makes of each. */
static const struct model_ops *const model_ops_by_id[MODEL_N] = {
    [MODEL_PLATFORM] = &plat_ops,
    [MODEL_VIRTUAL] = &vt_ops,
};

/* What a frame or a plot shows of model `id`, without a model at hand (a sweep's plot). */
static const struct model_words *model_words_of(int id)
{
    return model_ops_by_id[id]->words;
}

/* n threads, idle, at t = 0 (the models' init). */
static void model_spawn_idle(struct model *m, int n)
{
    for (int i = 0; i < n; i++) {
        int32_t t = thr_spawn(m, 0); /* may move m->thr: take the index before pushing */
        FIFO_PUSH(&m->idle, m->thr, t);
    }
}

static void model_init(struct model *m, const struct scenario *s, int kind)
{
    memset(m, 0, sizeof *m);
    m->id = kind;
    m->s = s;
    m->ops = model_ops_by_id[kind];
    m->cpu_per_request = s->cpu_per_request[kind];
    m->cpu_per_call = s->cpu_per_call[kind];
    m->runtime_threads = s->model_threads[kind] >= 0 ? s->model_threads[kind] : s->runtime_threads;
    m->stats.lat = hist_new();
    m->stats.lat_interval = hist_new();
    m->free_req = m->free_call = m->free_thr = -1;
    m->ready = m->idle = m->backlog = m->queue = m->todo = FIFO_EMPTY;
    m->core = xrealloc(NULL, (size_t)s->cores, sizeof *m->core);
    for (int c = 0; c < s->cores; c++)
        m->core[c] = (struct core){-1, -1, 0, 0, 0};
    for (int i = 0; i < s->nsvc; i++) {
        m->svc[i].wait_slot = m->svc[i].wait_conn = FIFO_EMPTY;
        svc_tw_alloc(&m->svc[i].tw, s->port_high - s->port_low + 1);
        svc_tw_alloc(&m->svc[i].peer_tw, svc_peer_tuples(s));
    }
    m->ops->init(m); /* its own state, and the threads it starts with */
    m->stats.thread_creations = 0;
    wl_start(m);
    evq_push(&m->events, s->sample_interval, EV_SAMPLE, 0, 0);
    if (s->warmup % s->sample_interval) /* else a sample begins the window (model_sample) */
        evq_push(&m->events, s->warmup, EV_BATCH, 0, 0);
    model_peaks(m);
}

static void model_free(struct model *m)
{
    evq_free(&m->events);
    free(m->req);
    free(m->call);
    free(m->thr);
    if (m->ops)
        m->ops->fini(m);
    free(m->core);
    free(m->user_iter);
    model_free_more(m);
    free(m->series);
    free(m->stats.lat);
    free(m->stats.lat_interval);
    for (int i = 0; i < m->stats.nbatch; i++)
        free(m->stats.batch[i].lat);
    free(m->stats.batch);
    for (int i = 0; i < MAX_SERVICES; i++) {
        free(m->svc[i].tw.at);
        free(m->svc[i].peer_tw.at);
    }
    memset(m, 0, sizeof *m);
}

/* Handle one event if there is one at or before `until` (and the scenario's end).
 * Returns its type, or -1 when there is none. */
static int model_step(struct model *m, simtime until)
{
    if (until > m->s->duration)
        until = m->s->duration;
    if (m->stuck)
        return -1;
    int from;
    const struct event *next = evq_peek(&m->events, &from);
    if (!next || next->t > until) {
        if (until > m->now)
            m->now = until;
        return -1;
    }
    struct event e = evq_pop_from(&m->events, from);
    model_prefetch(m, evq_head(&m->events, from));
    if (e.t != m->last_t) {
        m->last_t = e.t;
        m->same_t_events = 0;
        wl_note(m, e.t); /* for the refused users' tries (I.12) */
    } else if (++m->same_t_events > 1000000ull + 10ull * (uint64_t)m->s->users) {
        m->stuck = 1; /* a zero-time loop: far more events at one instant than users could cause */
        return -1;
    }
    m->now = e.t;
    int type = ev_type_of(&e);
    ev_handlers[type](m, &e);
    for (int32_t r; (r = FIFO_POP(&m->todo, m->req)) >= 0;)
        req_continue(m, r);
    model_peaks(m);
    m->stats.events++;
    return type;
}

/* When the model's next event happens; INT64_MAX when it has none. */
static simtime model_next_time(const struct model *m)
{
    int from;
    const struct event *e = evq_peek(&m->events, &from);
    return e ? e->t : INT64_MAX;
}

static void model_run(struct model *m, simtime until)
{
    while (model_step(m, until) >= 0) {
    }
    wl_settle(m); /* the refused users' tries so far, counted (I.12) */
}

/* ~~~~ The lesson ends: below, what it calls by name, the tools and the instruments ~~~~ */

/* ---- I.7 OS scheduler ---- */

/* C cores and one FIFO of runnable threads, time-sliced: a simplified CFS where every
 * runnable thread gets `timeslice` in turn, and a core that switches to a different thread
 * than it ran last pays `ctx_switch`. Both models use it: the platform model for its pool
 * threads, the virtual model for its carriers. */

static void cpu_dispatch(struct model *m, int c, int32_t t)
{
    struct core *k = &m->core[c];
    struct thr *th = &m->thr[t];
    simtime sw = k->last != t ? m->s->ctx_switch : 0;
    simtime run = th->burst_left < m->s->timeslice ? th->burst_left : m->s->timeslice;
    if (sw)
        m->stats.ctx_switches++;
    k->thr = t;
    k->last = t;
    k->run = sw + run;
    k->cpu = run;
    k->end = m->now + sw + run;
    th->core = c;
    thr_set(m, t, THR_RUNNING);
    evq_push_lane(&m->events, EVQ_CORES + c % EVQ_CORE_LANES, m->now + sw + run, EV_BURST_END,
                  (uint32_t)c, 0);
}

/* Thread t wants `ns` (> 0) of CPU. A free core it ran on last is preferred (no switch). */
static void cpu_want(struct model *m, int32_t t, simtime ns)
{
    int free = -1;
    m->thr[t].burst_left = ns;
    for (int c = 0; c < m->s->cores; c++)
        if (m->core[c].thr < 0) {
            if (m->core[c].last == t) {
                free = c;
                break;
            }
            if (free < 0)
                free = c;
        }
    if (free >= 0) {
        cpu_dispatch(m, free, t);
        return;
    }
    thr_set(m, t, THR_READY);
    FIFO_PUSH(&m->ready, m->thr, t);
}

/* Thread t wants `ns` (> 0) of CPU, after the threads already waiting for a core: its last
 * write woke another thread (the client), which preempts it (CFS wake-up preemption). */
static void cpu_yield(struct model *m, int32_t t, simtime ns)
{
    if (m->ready.len == 0) {
        cpu_want(m, t, ns);
        return;
    }
    m->thr[t].burst_left = ns;
    thr_set(m, t, THR_READY);
    FIFO_PUSH(&m->ready, m->thr, t);
}

/* Core time spent by now: the slices that ended (stats.busy_ns counts a slice at its end)
 * and what has run of each slice in progress. A window, batch or sample that begins or ends
 * inside a slice counts only its own part of it (whole slices put utilisation above 100%). */
static simtime cpu_busy_now(const struct model *m)
{
    simtime busy = m->stats.busy_ns;
    for (int c = 0; c < m->s->cores; c++)
        if (m->core[c].thr >= 0)
            busy += m->core[c].run - (m->core[c].end - m->now);
    return busy;
}

/* EV_BURST_END: a slice ended on core c. */
static void cpu_burst_end(struct model *m, const struct event *e)
{
    int c = (int)e->a;
    struct core *k = &m->core[c];
    int32_t t = k->thr, next;
    struct thr *th = &m->thr[t];
    m->stats.busy_ns += k->run;
    th->burst_left -= k->cpu;
    if (th->burst_left > 0) {
        if (m->ready.len == 0) {
            cpu_dispatch(m, c, t);
            return;
        }              /* nobody waits: go on */
        th->core = -1; /* preempted: to the back of the queue */
        k->thr = -1;
        thr_set(m, t, THR_READY);
        FIFO_PUSH(&m->ready, m->thr, t);
        cpu_dispatch(m, c, FIFO_POP(&m->ready, m->thr));
        return;
    }
    th->core = -1;
    k->thr = -1;
    if (th->req >= 0)
        req_continue(m, th->req); /* may want the CPU again at once, and get this core back */
    else
        m->ops->thread_free(m, t);
    if (k->thr < 0 && (next = FIFO_POP(&m->ready, m->thr)) >= 0)
        cpu_dispatch(m, c, next);
}

/* ---- I.8 Threads ---- */

static void thr_set(struct model *m, int32_t t, int state)
{
    struct thr *th = &m->thr[t];
    if (m->on_span && th->state != THR_IDLE && m->now > th->since)
        m->on_span(m, t, th->state, th->since, m->now);
    m->thr_state_n[th->state]--;
    m->thr_state_n[state]++;
    th->state = (uint8_t)state;
    th->since = m->now;
}

/* A new OS thread, idle and off-core. Its creation cost is charged by the caller. */
static int32_t thr_spawn(struct model *m, int extra)
{
    int32_t t = slot_take((void **)&m->thr, &m->nthr, &m->capthr, &m->free_thr, sizeof *m->thr);
    m->thr[t] = (struct thr){.next = -1,
                             .req = -1,
                             .core = -1,
                             .state = THR_IDLE,
                             .alive = 1,
                             .extra = (uint8_t)extra,
                             .id = (uint32_t)m->next_thread_id++,
                             .since = m->now,
                             .born = m->now};
    m->thr_state_n[THR_IDLE]++;
    m->threads_alive++;
    m->stats.thread_creations++;
    return t;
}

/* Precondition: the thread is idle and not in the idle list. */
static void thr_exit(struct model *m, int32_t t)
{
    m->thr_state_n[m->thr[t].state]--;
    m->thr[t].alive = 0;
    m->threads_alive--;
    slot_give(m->thr, &m->free_thr, sizeof *m->thr, t);
}

/* Thread t is idle from now on and may retire `after` from now if still idle then. At most
 * one check per thread is queued: going idle again while one is queued only notes the new
 * check, with the insertion order it would have had, and the queued one queues it when it
 * fires (thr_idle_timer_fired). A check per idle period would pile up for the whole
 * timeout: in a retry storm (calls failing at once) the queue grows as fast as threads idle. */
static void thr_idle_timer(struct model *m, int32_t t, simtime after)
{
    struct thr *th = &m->thr[t];
    if (!th->timer) {
        th->timer = 1;
        evq_push_lane(&m->events, EVQ_TIMERS, m->now + after, EV_IDLE_CHECK, (uint32_t)t,
                      th->idle_gen);
        return;
    }
    th->rearm = 1;
    th->rearm_gen = th->idle_gen;
    th->rearm_at = m->now + after;
    th->rearm_seq = evq_reserve(&m->events, 1);
}

/* t's queued check fired: queue the noted one if its idle period still goes on. */
static void thr_idle_timer_fired(struct model *m, int32_t t)
{
    struct thr *th = &m->thr[t];
    th->timer = 0;
    if (!th->rearm)
        return;
    th->rearm = 0;
    if (th->state == THR_IDLE && th->idle_gen == th->rearm_gen) {
        th->timer = 1;
        evq_push_keyed(&m->events, th->rearm_at, th->rearm_seq, EV_IDLE_CHECK, (uint32_t)t,
                       th->rearm_gen);
    }
}

/* Remove a given thread from the idle FIFO (idle timeouts retire threads from the middle). */
static void thr_unidle(struct model *m, int32_t t)
{
    struct fifo rest = FIFO_EMPTY;
    for (int32_t i; (i = FIFO_POP(&m->idle, m->thr)) >= 0;)
        if (i != t)
            FIFO_PUSH(&rest, m->thr, i);
    m->idle = rest;
}

/* ---- I.9 Downstream services ---- */

static void fifo_remove(struct fifo *q, void *base, size_t size, int32_t i); /* II.5 */
static uint64_t rng_splitmix(uint64_t *state);                               /* II.1 */

/* Ephemeral ports. Each closed connection's port sits in TIME_WAIT until its expiry, on the
 * side that closed first (net.close_first); expired ones are dropped lazily. */
static void svc_tw_alloc(struct tw_ring *q, int32_t cap)
{
    *q = (struct tw_ring){.cap = cap > 0 ? cap : 1};
    q->at = xrealloc(NULL, (size_t)q->cap, sizeof *q->at);
}

/* The 4-tuples an unpooled service can hold in TIME_WAIT when it closes first: one per port
 * of ours it saw. Linux's connect() walks the range by steps of 2 (one parity first, the
 * other left to bind()), so while ports are free it cycles through half of the range, and a
 * new SYN on a tuple takes over its TIME_WAIT. */
static int32_t svc_peer_tuples(const struct scenario *s)
{
    int32_t range = s->port_high - s->port_low + 1;
    return range > 1 ? range / 2 : 1;
}

/* Drop the oldest TIME_WAIT of q; *count is the model's total of that side. */
static void svc_tw_pop(struct tw_ring *q, int32_t *count)
{
    q->head = (q->head + 1) % q->cap;
    q->len--;
    (*count)--;
}

static void svc_tw_push(struct tw_ring *q, simtime expiry, int32_t *count)
{
    q->at[(q->head + q->len) % q->cap] = expiry;
    q->len++;
    (*count)++;
}

static void svc_expire(struct model *m, struct svc_state *v)
{
    while (v->tw.len && v->tw.at[v->tw.head] <= m->now)
        svc_tw_pop(&v->tw, &m->ports_tw);
    while (v->peer_tw.len && v->peer_tw.at[v->peer_tw.head] <= m->now)
        svc_tw_pop(&v->peer_tw, &m->peer_tw);
}

static int svc_port_take(struct model *m, struct svc_state *v)
{
    const struct scenario *s = m->s;
    int range = s->port_high - s->port_low + 1;
    svc_expire(m, v);
    if (v->ports_open + v->tw.len < range) {
        v->ports_open++;
        return 0;
    }
    /* tcp_tw_reuse: a TIME_WAIT port whose close is at least 1 s old may serve again */
    if (s->tw_reuse && v->tw.len && v->tw.at[v->tw.head] - s->time_wait + SEC <= m->now) {
        svc_tw_pop(&v->tw, &m->ports_tw);
        v->ports_open++;
        return 0;
    }
    return -1;
}

/* The connection closes: our port is free at once, or held in TIME_WAIT when we closed first;
 * when the service closed first, its socket's TIME_WAIT is kept (the oldest tuple is taken
 * over by the next SYN once every tuple has one). */
static void svc_port_close(struct model *m, struct svc_state *v)
{
    v->ports_open--;
    if (m->s->time_wait == 0)
        return;
    svc_expire(m, v);
    if (m->s->close_first == CLOSE_SERVER) {
        if (v->peer_tw.len == v->peer_tw.cap)
            svc_tw_pop(&v->peer_tw, &m->peer_tw);
        svc_tw_push(&v->peer_tw, m->now + m->s->time_wait, &m->peer_tw);
        return;
    }
    if (v->tw.len == v->tw.cap) { /* cannot happen: ports_open + tw.len <= range = tw.cap */
        fprintf(stderr, "sim: bug: TIME_WAIT ring full\n");
        abort();
    }
    svc_tw_push(&v->tw, m->now + m->s->time_wait, &m->ports_tw);
}

/* The call is over for its request: out of the request's list of calls (req.calls), freed. */
static void svc_call_free(struct model *m, int32_t c)
{
    int32_t *at = &m->req[m->call[c].req].calls;
    while (*at != c)
        at = &m->call[*at].sib;
    *at = m->call[c].sib;
    call_free(m, c);
}

/* The call's connection is released now: the time it held it, in the window. */
static void svc_held(struct model *m, int32_t c)
{
    if (m->now >= m->s->warmup)
        m->stats.scope.held_ns += (double)(m->now - m->call[c].conn_at);
}

/* Call c opens a new TCP connection (its port taken): counted, its connect CPU owed. */
static void svc_new_conn(struct model *m, int32_t c)
{
    struct svc_state *v = &m->svc[m->call[c].svc];
    v->opened++;
    m->call[c].new_conn = 1;
    m->req[m->call[c].req].debt +=
        cpu_cost(m, m->s->connect_cpu); /* paid on the caller's thread when it runs again */
    if (m->s->svc[m->call[c].svc].pool > 0) {
        v->conns_open++;
        v->conns_busy++;
    }
}

/* The call has a connection: now it needs a slot at the service, then it takes its latency. */
static void svc_start(struct model *m, int32_t c)
{
    struct call *k = &m->call[c];
    const struct service_cfg *cfg = &m->s->svc[k->svc];
    simtime lat = k->latency + (k->new_conn ? cfg->connect_time : 0);
    if (cfg->timeout && lat > cfg->timeout) {
        lat = cfg->timeout;
        k->timed_out = 1;
    }
    m->svc[k->svc].in_service++;
    k->where = CALL_IN_SERVICE;
    evq_push_lane(&m->events, k->svc % EVQ_SERVICE_LANES, m->now + lat, EV_IO_DONE, (uint32_t)c,
                  (uint32_t)k->req);
}

/* The call has a connection and asks for a permit of the service's limit: it starts, or
 * waits in line, at most `wait` (Semaphore.tryAcquire(wait), then 503). With wait 0 and
 * `may_refuse`, a call that finds no permit is refused at once: returns -1 (the caller fails
 * the request); otherwise a call that may not wait is shed by EV_SHED at this instant. */
static int svc_connected(struct model *m, int32_t c, int may_refuse)
{
    struct call *k = &m->call[c];
    struct svc_state *v = &m->svc[k->svc];
    const struct service_cfg *cfg = &m->s->svc[k->svc];
    k->conn_at = m->now;
    if (!cfg->limit || v->in_service < cfg->limit) {
        svc_start(m, c);
        return 0;
    }
    if (cfg->wait == 0 && may_refuse)
        return -1;
    k->where = CALL_WAIT_SLOT;
    FIFO_PUSH(&v->wait_slot, m->call, c);
    if (cfg->wait != SVC_WAIT_UNLIMITED) {
        m->call[c].shed_at = m->now + cfg->wait;
        evq_push(&m->events, m->call[c].shed_at, EV_SHED, k->svc, 0);
    }
    return 0;
}

/* A call is over (answered, timed out or shed): its connection goes back to the pool, to
 * the next call waiting for one, or is closed (TIME_WAIT on the side that closes first). */
static void svc_release_conn(struct model *m, int svc)
{
    struct svc_state *v = &m->svc[svc];
    int32_t next;
    if (m->s->svc[svc].pool > 0) {
        if ((next = FIFO_POP(&v->wait_conn, m->call)) >= 0)
            svc_connected(m, next, 0); /* hand over */
        else
            v->conns_busy--;
    } else {
        svc_port_close(m, v);
    }
}

/* STRUCTURED CONCURRENCY: a par(...) is a scope whose subtasks are its calls. When one fails
 * (an error, a timeout, no permit, no port) and on_failure is cancel, the scope shuts down:
 * JDK 25's StructuredTaskScope interrupts every unfinished subtask, and a virtual thread
 * parked in a socket read is unparked, its socket closed ("Closed by interrupt"). The C
 * server does the same (aggregator.c: agg_scope_run forks the calls, the first failure's
 * agg_scope_failed calls vt_cancel on each sibling, whose parked ds_call wakes with ECANCELED
 * and closes its connection). Here each sibling still in flight ends at once: its permit of
 * `limit` goes to the next in line, its connection is closed, never pooled, and its answer,
 * when it comes, is dropped; siblings not yet begun never begin (svc_call). The request then
 * fails at once with the first failure's reason. With wait it fails when its last call is
 * done, as a join of every subtask would; so does the platform model's, whatever the policy,
 * since an interrupt does not end a thread's blocking read (svc_scope_cancels). */

/* A cancelled call's connection is closed, never pooled (its answer, half read, would be the
 * next call's). The answer then comes to a socket already closed, which answers it with a
 * reset: our port is free at once, without TIME_WAIT. A pooled one closed leaves room in the
 * pool: a call waiting for a connection opens a new one. */
static void svc_abort_conn(struct model *m, int svc)
{
    struct svc_state *v = &m->svc[svc];
    v->ports_open--;
    if (m->s->svc[svc].pool == 0)
        return;
    v->conns_open--;
    v->conns_busy--;
    int32_t next = v->wait_conn.head;
    if (next >= 0 && svc_port_take(m, v) == 0) {
        FIFO_POP(&v->wait_conn, m->call);
        svc_new_conn(m, next);
        svc_connected(m, next, 0);
    }
}

/* Cancel call c, wherever it is: waiting for a connection, for a permit, or in service. */
static void svc_cancel_call(struct model *m, int32_t c)
{
    struct call *k = &m->call[c];
    struct svc_state *v = &m->svc[k->svc];
    int svc = k->svc, where = k->where;
    int32_t next;
    v->inflight--;
    if (where == CALL_WAIT_CONN) {
        fifo_remove(&v->wait_conn, m->call, sizeof *m->call, c);
        call_free(m, c);
        return;
    }
    if (where == CALL_WAIT_SLOT) {
        fifo_remove(&v->wait_slot, m->call, sizeof *m->call, c);
    } else { /* in service: its permit is the next in line's */
        v->in_service--;
        if ((next = FIFO_POP(&v->wait_slot, m->call)) >= 0)
            svc_start(m, next);
    }
    svc_held(m, c);
    svc_abort_conn(m, svc);
    if (where == CALL_WAIT_SLOT)
        call_free(m, c);
    else /* its EV_IO_DONE frees it; till then it is nobody's (the window shows no request) */
        m->call[c] = (struct call){.req = -1, .where = CALL_CANCELLED};
}

/* Does a failed call shut its scope down? Where on_failure is cancel and an interrupt ends a
 * waiting call: a parked virtual thread's. A platform thread blocked in read(2) reads on, as
 * with Future.cancel(true) on a pool thread (aggregator.c's platform mode joins all whatever
 * the flag), so there the scope joins every call. */
static int svc_scope_cancels(const struct model *m)
{
    return m->s->on_failure == ON_FAILURE_CANCEL && m->ops->interruptible;
}

/* A call of request r failed (and is out of r's list): with cancel, its siblings end now. */
static void svc_scope_fail(struct model *m, int32_t r)
{
    if (!svc_scope_cancels(m))
        return;
    for (int32_t c; (c = m->req[r].calls) >= 0;) {
        m->req[r].calls = m->call[c].sib;
        svc_cancel_call(m, c);
        m->req[r].pending--;
    }
}

/* req_count: a request failed; in the window its latency is kept for the report. */
static void svc_count_failed(struct model *m, const struct req *req)
{
    struct scope_stats *sc = &m->stats.scope;
    if (m->now < m->s->warmup)
        return;
    if (!sc->failed_lat)
        sc->failed_lat = hist_new();
    sc->failed++;
    hist_add(sc->failed_lat, (uint64_t)(m->now - req->arrived));
}

/* A call that got no permit fails its request with a 503: the request goes on once its other
 * calls are answered, then fails (as a timeout does). */
static void svc_shed_call(struct model *m, int32_t c)
{
    int svc = m->call[c].svc;
    int32_t r = m->call[c].req;
    m->svc[svc].inflight--;
    svc_held(m, c);
    svc_call_free(m, c);
    svc_release_conn(m, svc);
    if (m->req[r].fail == FAIL_NONE)
        m->req[r].fail = FAIL_SHED;
    svc_scope_fail(m, r);
}

/* The call at the head of service svc's line if it has waited its `wait` by t, else -1. */
static int32_t svc_due(const struct model *m, int svc, simtime t)
{
    int32_t c = m->svc[svc].wait_slot.head;
    return c >= 0 && m->call[c].shed_at <= t ? c : -1;
}

/* EV_SHED: the calls at the head of the service's line that have waited their `wait` give
 * up (the line is in arrival order and every call waits as long, so they are its head). */
static void svc_shed(struct model *m, const struct event *e)
{
    struct svc_state *v = &m->svc[e->a];
    int32_t c;
    while ((c = svc_due(m, (int)e->a, m->now)) >= 0) {
        int32_t r = m->call[c].req;
        FIFO_POP(&v->wait_slot, m->call);
        svc_shed_call(m, c);
        req_wake_one(m, r);
    }
}

/* svc_connected from the request's own step: a call refused at once is shed here. */
static int svc_admit(struct model *m, int32_t c)
{
    if (svc_connected(m, c, 1) == 0)
        return FAIL_NONE;
    svc_shed_call(m, c);
    return FAIL_SHED;
}

/* Begin a downstream call for request r. Returns FAIL_NONE, or why it failed at once (and
 * frees the call): FAIL_NO_PORT if no ephemeral port is left (connect() fails with
 * EADDRNOTAVAIL), FAIL_SHED if the service has no permit and the call may not wait. */
static int svc_call(struct model *m, int32_t r, int svc, simtime latency)
{
    const struct service_cfg *cfg = &m->s->svc[svc];
    struct svc_state *v = &m->svc[svc];
    if (svc_scope_cancels(m) && m->req[r].fail != FAIL_NONE)
        return m->req[r].fail; /* a sibling failed: the scope is shut down, this one never forks */
    int fails = cfg->fail_share > 0 && rng_unit(rng_splitmix(&m->req[r].rng)) < cfg->fail_share;
    int32_t c = call_alloc(m);
    m->call[c] = (struct call){.next = -1,
                               .req = r,
                               .svc = (uint8_t)svc,
                               .latency = fails ? cfg->fail_after : latency,
                               .fails = (uint8_t)fails,
                               .where = CALL_WAIT_CONN,
                               .sib = m->req[r].calls};
    m->req[r].calls = c;
    m->stats.scope.calls += m->now >= m->s->warmup;
    v->calls++;
    v->inflight++;
    if (cfg->pool > 0) { /* keep-alive pool: reuse, grow up to the pool size, or wait */
        if (v->conns_busy < v->conns_open) {
            v->conns_busy++;
            return svc_admit(m, c);
        }
        if (v->conns_open >= cfg->pool) {
            FIFO_PUSH(&v->wait_conn, m->call, c);
            return FAIL_NONE;
        }
    }
    if (svc_port_take(m, v) < 0) {
        v->inflight--;
        svc_call_free(m, c);
        svc_scope_fail(m, r);
        return FAIL_NO_PORT;
    }
    svc_new_conn(m, c);
    return svc_admit(m, c);
}

/* EV_IO_DONE: the service answered (or the call timed out). Free the slot and the
 * connection, hand them to the next waiter, and tell the request. */
static void svc_done(struct model *m, const struct event *e)
{
    int32_t c = (int32_t)e->a, next;
    struct call *k = &m->call[c];
    if (k->where == CALL_CANCELLED) { /* its scope ended it (svc_cancel_call): nobody reads it */
        call_free(m, c);
        return;
    }
    struct svc_state *v = &m->svc[k->svc];
    int32_t r = k->req;
    v->in_service--;
    v->inflight--;
    if ((next = FIFO_POP(&v->wait_slot, m->call)) >= 0)
        svc_start(m, next);
    svc_held(m, c);
    svc_release_conn(m, k->svc);
    k = &m->call[c];
    int failed = k->timed_out ? FAIL_TIMEOUT : k->fails ? FAIL_ERROR : FAIL_NONE;
    if (failed != FAIL_NONE && m->req[r].fail == FAIL_NONE)
        m->req[r].fail = (int8_t)failed;
    svc_call_free(m, c);
    if (failed != FAIL_NONE)
        svc_scope_fail(m, r);
    req_wake_one(m, r);
}

/* ---- I.10 Engine bookkeeping ---- */

/* What the engine keeps for the instruments: the peaks after every event, the time series'
 * rows and the steady-state bins at every EV_SAMPLE, the window's batches (EV_BATCH). The
 * reports (IV.1) and the window (Part V) read them; the lesson only calls these by name. */

/* One row of the time series, sampled every sample_interval. A model keeps at most
 * SERIES_MAX rows (about 100 MiB); sim_load refuses a run that would need more. */
#define SERIES_MAX 1000000
struct sample {
    simtime t;
    double rps;         /* completions per second in the interval */
    double p99_ms;      /* p99 of the requests completed in the interval, 0 if none */
    double cpu_util;    /* busy core time / (cores * interval), 0..1 */
    int32_t os_threads; /* runtime threads + pool threads or carriers */
    int32_t blocked;    /* OS threads blocked in the kernel */
    int32_t carriers_busy, vt_runnable, vt_parked, vt_pinned;
    int32_t queued; /* requests waiting for a thread (executor queue / run queue) */
    int32_t in_flight, ports_tw, ports_open, conns_busy;
    int64_t thread_mem; /* committed bytes of thread stacks */
    int64_t rss;        /* predicted RSS (see model_rss) */
    uint64_t failed;    /* failures so far */
};

/* The process's OS threads: the runtime's own, plus pool workers or carriers. */
static int32_t model_os_threads(const struct model *m)
{
    return m->runtime_threads + m->threads_alive;
}

static int64_t model_thread_mem(const struct model *m)
{
    const struct scenario *s = m->s;
    return (int64_t)model_os_threads(m) * s->thread_stack_rss +
           (int64_t)m->vt_alive * s->vt_stack_bytes;
}

/* Predicted RSS: the idle process, the thread stacks, and per connection and request. */
static inline int64_t model_rss(const struct model *m, int64_t thread_mem)
{
    const struct scenario *s = m->s;
    int64_t rss = s->mem_base + thread_mem + (int64_t)m->conns * s->mem_per_connection;
    if (s->mem_per_request) /* ask the model only when it counts: this runs every event */
        rss += (int64_t)m->ops->in_service(m) * s->mem_per_request;
    return rss;
}

#define PEAK(field, value)                                                                         \
    do {                                                                                           \
        if ((value) > stats->field)                                                                \
            stats->field = (value);                                                                \
    } while (0)
static void model_peaks(struct model *m)
{
    struct stats *stats = &m->stats;
    int64_t reserved = (int64_t)model_os_threads(m) * m->s->thread_stack_reserved;
    PEAK(peak_os_threads, model_os_threads(m));
    PEAK(peak_carriers_busy, m->carriers_busy);
    PEAK(peak_vt_parked, m->vt_parked);
    PEAK(peak_vt_pinned, m->vt_pinned);
    PEAK(peak_queued, m->queue.len); /* the carriers' own queues: vt_enqueue */
    PEAK(peak_blocked, m->thr_state_n[THR_BLOCKED]);
    PEAK(peak_in_flight, m->in_flight);
    int64_t thread_mem = model_thread_mem(m);
    PEAK(peak_thread_mem, thread_mem);
    PEAK(peak_rss, model_rss(m, thread_mem));
    PEAK(peak_thread_reserved, reserved);
    PEAK(peak_ports_tw, m->ports_tw);
}

static void wl_settle_sample(struct model *m); /* I.12 */

/* The row of the time series at m->now: the interval since the previous row, and gauges. */
static struct sample model_sample_row(struct model *m)
{
    wl_settle_sample(m); /* the row's failures include the refused users' tries (I.12) */
    const struct scenario *s = m->s;
    struct stats *stats = &m->stats;
    struct sample x = {.t = m->now};
    for (int i = 0; i < s->nsvc; i++) {
        x.ports_open += m->svc[i].ports_open;
        x.conns_busy += m->svc[i].conns_busy;
    }
    x.rps = (double)stats->interval_done / ((double)s->sample_interval / SEC);
    x.p99_ms = (double)hist_quantile(stats->lat_interval, 0.99) / 1e6;
    x.cpu_util = (double)(cpu_busy_now(m) - stats->busy_at_sample) /
                 ((double)s->cores * (double)s->sample_interval);
    if (x.cpu_util > 1)
        x.cpu_util = 1;
    x.os_threads = model_os_threads(m);
    x.blocked = m->thr_state_n[THR_BLOCKED];
    x.carriers_busy = m->carriers_busy;
    x.vt_runnable = m->ops->runnable(m);
    x.vt_parked = m->vt_parked;
    x.vt_pinned = m->vt_pinned;
    x.queued = m->ops->queued(m) + m->backlog.len;
    x.in_flight = m->in_flight;
    x.ports_tw = m->ports_tw;
    x.thread_mem = model_thread_mem(m);
    x.rss = model_rss(m, x.thread_mem);
    for (int k = 0; k < FAIL_N; k++)
        x.failed += stats->failed[k];
    stats->interval_done = 0;
    stats->busy_at_sample = cpu_busy_now(m);
    hist_clear(stats->lat_interval);
    return x;
}

/* The bins the steady-state verdict reads: bin i holds the samples that end in
 * (i, i + 1] x duration / nbins. */
static int model_nbins(const struct scenario *s)
{
    simtime samples = s->duration / s->sample_interval;
    return samples < STEADY_BINS ? (int)samples : STEADY_BINS;
}

/* The interval that this sample closes, into its bin. */
static void model_bin(struct model *m)
{
    struct stats *st = &m->stats;
    int nb = model_nbins(m->s), i = (int)((double)(m->now - 1) * nb / (double)m->s->duration);
    if (i < 0 || i >= nb)
        return;
    st->bin_done[i] += st->completed - st->done_at_sample;
    st->bin_lat[i] += st->lat_sum - st->lat_at_sample;
    st->bin_in_system[i] += m->in_flight; /* at the sample's instant */
    st->bin_samples[i]++;
    st->done_at_sample = st->completed;
    st->lat_at_sample = st->lat_sum;
}

/* EV_SAMPLE: TIME_WAITs that expired are dropped (the peaks see it), and with keep_series
 * the row is kept, in an array sized once for the whole run, never beyond SERIES_MAX. */
static void model_sample(struct model *m, const struct event *e)
{
    (void)e;
    const struct scenario *s = m->s;
    for (int i = 0; i < s->nsvc; i++)
        svc_expire(m, &m->svc[i]);
    if (m->keep_series && !m->series) {
        simtime rows = s->duration / s->sample_interval;
        m->capseries = rows < SERIES_MAX ? (int32_t)rows : SERIES_MAX;
        m->series = xrealloc(NULL, (size_t)m->capseries, sizeof *m->series);
    }
    if (m->keep_series && m->nseries < m->capseries)
        m->series[m->nseries++] = model_sample_row(m);
    model_bin(m);
    if (m->now == s->warmup) /* the window begins: one event fewer in the heap than EV_BATCH */
        model_batch(m, &(struct event){.t = m->now});
    if (m->now + s->sample_interval <= s->duration)
        evq_push(&m->events, m->now + s->sample_interval, EV_SAMPLE, 0, 0);
}

/* The window begins (a = 0: at warmup, by this event or by the sample then) or its batch a
 * begins (model_batches): utilisation and batch means count from here. */
static void model_batch(struct model *m, const struct event *e)
{
    struct stats *st = &m->stats;
    const struct scenario *s = m->s;
    if (e->a == 0)
        st->busy_at_warmup = cpu_busy_now(m);
    if (!st->nbatch)
        return;
    st->cur_batch = (int32_t)e->a;
    st->batch[e->a].busy_from = cpu_busy_now(m);
    if ((int32_t)e->a + 1 < st->nbatch)
        evq_push(&m->events, s->warmup + (s->duration - s->warmup) * (e->a + 1) / st->nbatch,
                 EV_BATCH, e->a + 1, 0);
}

static void model_batch_add(struct batch *b, uint64_t lat)
{
    b->done++;
    b->lat_sum += (double)lat;
    hist_add(b->lat, lat);
}

/* Split the window into k equal batches for batch means (--batches); before the run. */
static void model_batches(struct model *m, int k)
{
    const struct scenario *s = m->s;
    m->stats.nbatch = k;
    m->stats.batch = xrealloc(NULL, (size_t)k, sizeof *m->stats.batch);
    for (int i = 0; i < k; i++)
        m->stats.batch[i] = (struct batch){.lat = hist_new()};
    if (k > 1)
        evq_push(&m->events, s->warmup + (s->duration - s->warmup) / k, EV_BATCH, 1, 0);
}

/* FOR SPEED ONLY: the request a queued event will touch first, or -1. Its 100,000 peers
 * outgrow the L2 cache, so a request an I/O completion wakes is a cache miss; it is fetched
 * when its event reaches the head of its lane or heap, while the events before it run. */
static int32_t model_event_req(const struct event *e)
{
    switch (ev_type_of(e)) {
    case EV_IO_DONE:
        return (int32_t)e->b;
    case EV_IO_STEP_DONE:
        return (int32_t)e->a;
    default:
        return -1;
    }
}

PREFETCH_FN void model_prefetch(const struct model *m, const struct event *e)
{
    int32_t r = e ? model_event_req(e) : -1;
    if (r < 0)
        return;
    fifo_prefetch(m->req, sizeof *m->req, r);
    if (ev_type_of(e) == EV_IO_DONE) /* and its call */
        fifo_prefetch(m->call, sizeof *m->call, (int32_t)e->a);
}

/* ---- I.11 The window's view ---- */

/* What the window (Part V) reads of a model beyond model_ops' words and view, read-only: a
 * thread or a request by index, which request a thread carries and which thread a request
 * holds, the parked requests' calls, and the narration of an event (what it did, to whom),
 * told by the engine that ran it. The window never indexes the model's arrays itself. */

static const struct thr *model_thread(const struct model *m, int32_t t)
{
    return &m->thr[t];
}

static const struct req *model_request(const struct model *m, int32_t r)
{
    return &m->req[r];
}

/* The request thread t serves or carries, -1 if none. */
static int32_t model_carried(const struct model *m, int32_t t)
{
    return m->thr[t].req;
}

/* The thread running on core c, -1 if it is idle. */
static int32_t model_on_core(const struct model *m, int c)
{
    return m->core[c].thr;
}

/* The thread request r holds (its OS thread, or its carrier while mounted), -1 if none. */
static int32_t model_holder(const struct model *m, int32_t r)
{
    return m->req[r].thr;
}

/* The request after r in the FIFO r waits in (a model_view box, a run queue), -1 at its end. */
static int32_t model_fifo_next(const struct model *m, int32_t r)
{
    return m->req[r].next;
}

/* Call slot c (0 <= c < ncall): the request it belongs to if that one is parked, else -1;
 * *svc is the call's service. A freed slot belongs to no request. */
static int32_t model_parked_call(const struct model *m, int32_t c, int *svc)
{
    const struct call *k = &m->call[c];
    *svc = k->svc;
    return k->req >= 0 && m->req[k->req].parked ? k->req : -1;
}

/* Is slot r on the free list? Walks it: for one narrated event, not for every frame. */
static int model_slot_free(const struct model *m, int32_t r)
{
    for (int32_t i = m->free_req; i >= 0; i = m->req[i].next)
        if (i == r)
            return 1;
    return 0;
}

/* A request slot in use (for the one request a card or a ring is about). */
static int model_live(const struct model *m, int32_t r)
{
    return r >= 0 && r < m->nreq && !model_slot_free(m, r);
}

/* "call(orders)", "par(A,B)", "cpu", "io", "end" for step pc. */
static void model_step_name(const struct scenario *s, int pc, char *buf, size_t len)
{
    static const char *const ops[] = {
        [OP_CPU] = "cpu", [OP_CALL] = "call",         [OP_PAR] = "par",
        [OP_IO] = "io",   [OP_SYNC_BEGIN] = "sync {", [OP_SYNC_END] = "}"};
    if (pc >= s->nsteps) {
        snprintf(buf, len, "end");
        return;
    }
    const struct step *step = &s->prog[pc];
    int o = snprintf(buf, len, "%s", ops[step->op]);
    if (step->op != OP_CALL && step->op != OP_PAR)
        return;
    for (int i = 0; i < step->nsvc && o > 0 && (size_t)o < len; i++)
        o += snprintf(buf + o, len - (size_t)o, "%s%s", i ? "," : "(", s->svc[step->svc[i]].name);
    if (o > 0 && (size_t)o < len)
        snprintf(buf + o, len - (size_t)o, ")");
}

/* What request r is doing now, in the model's words: the status line and the inspect card. */
static void model_req_doing(const struct model *m, int32_t r, char *buf, size_t len)
{
    const struct model_words *w = m->ops->words;
    const struct req *req = &m->req[r];
    char step[64];
    /* step names are bounded to 40 characters so every line fits in 96 */
    model_step_name(m->s, req->pc, step, sizeof step);
    if (req->fail != FAIL_NONE)
        snprintf(buf, len, "fails: %s", fail_names[req->fail]);
    else if (req->parked)
        snprintf(buf, len, "parked, waiting for %.40s", step);
    else if (req->pinned && req->pc < m->s->nsteps && m->s->prog[req->pc].op == OP_IO)
        snprintf(buf, len, "holds %s %s#%u, blocked in io() (the JDK compensates)", w->thread,
                 w->thr_prefix, m->thr[req->thr].id);
    else if (req->pinned)
        snprintf(buf, len, "pins %s %s#%u, blocked in %.40s inside sync", w->thread, w->thr_prefix,
                 m->thr[req->thr].id, step);
    else if (req->thr >= 0) {
        const struct thr *th = &m->thr[req->thr];
        if (th->state == THR_RUNNING)
            snprintf(buf, len, "runs %.40s on %s#%u, core %d", step, w->thr_prefix, th->id,
                     th->core);
        else if (th->state == THR_READY)
            snprintf(buf, len, "on %s#%u, waiting for a core (%.40s)", w->thr_prefix, th->id, step);
        else if (th->state == THR_BLOCKED)
            snprintf(buf, len, "blocks %s#%u in the kernel in %.40s", w->thr_prefix, th->id, step);
        else
            snprintf(buf, len, "on %s#%u", w->thr_prefix, th->id);
    } else if (!req->admitted)
        snprintf(buf, len, "waits in the accept backlog");
    else if (m->ops->queued_at(m, r) >= 0)
        snprintf(buf, len, "waits in %s %s#%u's run queue", w->thread, w->thr_prefix,
                 m->thr[m->ops->queued_at(m, r)].id);
    else
        snprintf(buf, len, "waits in the %s", w->queue);
}

/* What the next event is about, read from the queue before it runs: the handlers' view of
 * its payload (enum ev_type says what a and b are). */
struct model_subject {
    int type;
    int32_t thr, req, core; /* -1 when not involved */
    uint32_t req_id, thr_id;
    simtime arrived;
    int svc, user;
    int32_t new_slot;   /* the slot a request arriving now will take */
    uint64_t arrived_n; /* requests arrived before the event */
};

/* EV_SHED's victim at t: the request of the call svc_shed sheds first, else -1. */
static int32_t model_shed_victim(const struct model *m, int svc, simtime t)
{
    int32_t c = svc_due(m, svc, t);
    return c >= 0 ? m->call[c].req : -1;
}

static struct model_subject model_subject_of(const struct model *m)
{
    int from;
    const struct event *e = evq_peek(&m->events, &from);
    struct model_subject u = {
        ev_type_of(e),   -1, -1, -1, 0, 0, 0, -1, -1, m->free_req >= 0 ? m->free_req : m->nreq,
        m->stats.arrived};
    switch (u.type) {
    case EV_ARRIVE:
        u.user = m->s->users ? (int)e->a : -1;
        break;
    case EV_BURST_END:
        u.core = (int32_t)e->a;
        u.thr = m->core[e->a].thr;
        u.req = u.thr >= 0 ? m->thr[u.thr].req : -1;
        break;
    case EV_IO_DONE:
        u.req = m->call[e->a].req;
        u.svc = m->call[e->a].svc;
        break;
    case EV_IO_STEP_DONE:
        u.req = (int32_t)e->a;
        break;
    case EV_IDLE_CHECK:
        u.thr = (int32_t)e->a;
        break;
    case EV_SHED:
        u.svc = (int)e->a;
        u.req = model_shed_victim(m, u.svc, e->t);
        break;
    }
    if (u.thr >= 0)
        u.thr_id = m->thr[u.thr].id;
    if (u.req >= 0) {
        u.req_id = m->req[u.req].id;
        u.arrived = m->req[u.req].arrived;
    }
    return u;
}

/* "user 17 sends a request", "orders answers VT#512": the event, before it runs. */
static int model_said_before(const struct model *m, const struct model_subject *u, char *buf,
                             size_t len)
{
    const char *rp = m->ops->words->req_prefix, *tp = m->ops->words->thr_prefix;
    switch (u->type) {
    case EV_ARRIVE:
        return u->user >= 0 ? snprintf(buf, len, "user %d sends a request", u->user)
                            : snprintf(buf, len, "a request arrives");
    case EV_BURST_END:
        return snprintf(buf, len, "%s#%u (%s#%u) ends a CPU slice on core %d", tp, u->thr_id, rp,
                        u->req_id, u->core);
    case EV_IO_DONE:
        return snprintf(buf, len, "%s answers %s#%u", m->s->svc[u->svc].name, rp, u->req_id);
    case EV_IO_STEP_DONE:
        return snprintf(buf, len, "io() of %s#%u finishes", rp, u->req_id);
    case EV_IDLE_CHECK:
        return snprintf(buf, len, "%s#%u's idle timer fires", tp, u->thr_id);
    case EV_SHED:
        return u->req >= 0 ? snprintf(buf, len, "%s#%u waited %s's limit past its wait: 503 (shed)",
                                      rp, u->req_id, m->s->svc[u->svc].name)
                           : snprintf(buf, len, "%s's permit timer: no call waited that long",
                                      m->s->svc[u->svc].name);
    default:
        return snprintf(buf, len, "time-series sample");
    }
}

/* Narrate the event u was read before, now that m has run it: what it did, and to whom.
 * *req is the request it touched if one is still in the server, else -1; *thr the thread
 * it was about, -1 if none. */
static void model_narrate(const struct model *m, const struct model_subject *u, char *buf,
                          size_t len, int32_t *thr, int32_t *req)
{
    int o = snprintf(buf, len, "t=%.6f s  %s: ", (double)m->now / SEC, model_names[m->id]);
    o += model_said_before(m, u, buf + o, len - (size_t)o);
    int32_t r = u->req;
    if (u->type == EV_ARRIVE && m->stats.arrived > u->arrived_n)
        r = u->new_slot;
    *thr = u->thr;
    *req = -1;
    if ((size_t)o >= len)
        return;
    if (r >= 0 && !model_slot_free(m, r)) {
        char doing[96];
        model_req_doing(m, r, doing, sizeof doing);
        snprintf(buf + o, len - (size_t)o, " -> %s#%u %s", m->ops->words->req_prefix, m->req[r].id,
                 doing);
        *req = r;
    } else if (r >= 0) /* it left the server; a freed slot keeps its `fail` and `id` */
        snprintf(buf + o, len - (size_t)o, " -> %s#%u %s after %.1f ms", m->ops->words->req_prefix,
                 m->req[r].id,
                 m->req[r].fail == FAIL_NONE ? "completes" : fail_names[m->req[r].fail],
                 (double)(m->now - m->req[r].arrived) / 1e6);
    else if (u->type == EV_IDLE_CHECK && !m->thr[u->thr].alive)
        snprintf(buf + o, len - (size_t)o, " -> it retires (idle too long)");
}

/* ---- I.12 Refused users' retries ---- */

/* A closed-loop user refused at the door (maxConnections and acceptCount full: the kernel
 * answers RST, as to Tomcat's client) tries again every P = think + retry_after. With
 * `retry_after` of a millisecond (the load generator sends again at once) and 100,000 users,
 * that is a hundred million tries a simulated second, each refused at once and each an event.
 * A refused try changes nothing but counters, so a refused user waits here instead, as if it
 * went on trying: its tries at entered + kP are counted (`user_iter`, `arrived`, `failed`, as
 * wl_arrive and req_count would), and it is sent again only when a connection or a backlog
 * place frees (req_free), at its next try. Which user then is the one whose next try comes
 * first, as it would have been: the users in order of phase (entered mod P), and among those
 * of one phase in the order their tries run at one instant (a first arrival, its order taken
 * at the start, before those who try again; the others in the order they began to wait; a
 * woken user refused again keeps its place). As many are woken as places are free (`woken`
 * counts those on their way), so no try that would find a place is skipped.
 * Only with a constant think time (each try's time is then known without a draw). A woken
 * try takes the insertion order it would have had (II.4): its first, the order next when its
 * user began to wait; a later one, the order next when the instant of the try before it began
 * (wl_note keeps the instants of the last period). The same run but for the event count,
 * except at an instant a try shares with another event that the try before it would have
 * queued behind it (a try is taken to be the first handled at its instant). The counters are
 * brought up to date (wl_count_to) where they are read: each series row, the end of model_run.
 * The waiting users are a treap keyed by (phase, rank) with subtree sizes: the next try after
 * a time, and the number of tries up to it, each in O(log n). */
/* An instant the engine handled, and the insertion order next to be taken when it began. */
struct wl_instant {
    simtime t;
    uint64_t seq;
};

struct wl_waiters {
    simtime period;             /* P: think + retry_after, the same for every try */
    int32_t root, n, woken;     /* the treap (-1: empty), users in it, woken and on their way */
    int32_t *left, *right, *sz; /* per user: the treap's links and subtree sizes */
    simtime *entered;           /* per user: when it was refused; tries at entered + kP, k >= 1 */
    int64_t *rank;              /* per user: its place among those of the same phase */
    uint64_t *order;            /* per user: the insertion order its next try has (II.4) */
    struct wl_instant *seen;    /* the instants of the last period: a ring, oldest first */
    uint32_t seen_head, seen_len, seen_cap;
    int64_t last_rank, first_rank; /* the last rank given after the others, before them */
    int64_t rounds;                /* the sum over waiting users of floor(entered / P) */
    uint64_t left_tries;           /* the tries of users who left the treap, up to their leaving */
    uint64_t counted;              /* tries already added to the counters */
    simtime last_entry;            /* the last time a user began to wait */
    int32_t last_entries;          /* users who began to wait then and wait still */
    int32_t returning;             /* the woken user whose try is being handled, -1 none */
    uint64_t returning_event;
};

static simtime wl_phase(const struct wl_waiters *w, int32_t u)
{
    return w->entered[u] % w->period;
}

/* (phase, rank) of u before that of v? */
static int wl_before(const struct wl_waiters *w, int32_t u, simtime phase, int64_t rank)
{
    simtime p = wl_phase(w, u);
    return p < phase || (p == phase && w->rank[u] < rank);
}

/* A node's heap priority: a hash of the user, so the tree's shape is the same run to run. */
static uint32_t wl_priority(int32_t u)
{
    return (uint32_t)(rng_key(0x77616974ull, (uint64_t)u, 0) >> 32);
}

static int32_t wl_size(const struct wl_waiters *w, int32_t t)
{
    return t < 0 ? 0 : w->sz[t];
}

static void wl_fix(struct wl_waiters *w, int32_t t)
{
    w->sz[t] = 1 + wl_size(w, w->left[t]) + wl_size(w, w->right[t]);
}

/* Split tree t into the keys before (phase, rank) (*a) and the rest (*b). */
static void wl_split(struct wl_waiters *w, int32_t t, simtime phase, int64_t rank, int32_t *a,
                     int32_t *b)
{
    if (t < 0) {
        *a = *b = -1;
    } else if (wl_before(w, t, phase, rank)) {
        wl_split(w, w->right[t], phase, rank, &w->right[t], b);
        wl_fix(w, t);
        *a = t;
    } else {
        wl_split(w, w->left[t], phase, rank, a, &w->left[t]);
        wl_fix(w, t);
        *b = t;
    }
}

/* Every key of a before every key of b. */
static int32_t wl_merge(struct wl_waiters *w, int32_t a, int32_t b)
{
    if (a < 0 || b < 0)
        return a < 0 ? b : a;
    if (wl_priority(a) > wl_priority(b)) {
        w->right[a] = wl_merge(w, w->right[a], b);
        wl_fix(w, a);
        return a;
    }
    w->left[b] = wl_merge(w, a, w->left[b]);
    wl_fix(w, b);
    return b;
}

/* Take the least key out of tree *t (not empty); returns its user. */
static int32_t wl_take_first(struct wl_waiters *w, int32_t *t)
{
    if (w->left[*t] < 0) {
        int32_t u = *t;
        *t = w->right[u];
        return u;
    }
    int32_t u = wl_take_first(w, &w->left[*t]);
    wl_fix(w, *t);
    return u;
}

/* Waiting users whose phase is above `phase`. */
static int64_t wl_count_after(const struct wl_waiters *w, simtime phase)
{
    int64_t n = 0;
    for (int32_t t = w->root; t >= 0;)
        if (wl_phase(w, t) > phase) {
            n += 1 + wl_size(w, w->right[t]);
            t = w->left[t];
        } else {
            t = w->right[t];
        }
    return n;
}

/* A refused user (its try at m->now failed) waits for a place instead of trying every
 * think + retry_after; 0 where the shortcut does not apply (a random think time): it tries as
 * before (wl_next). */
static int wl_wait(struct model *m, int32_t user)
{
    const struct scenario *s = m->s;
    uint64_t none = 0; /* a constant draws nothing */
    simtime period = dist_sample(&s->think, &none) + s->retry_after;
    if (s->think.shape != DIST_CONST || period <= 0)
        return 0;
    struct wl_waiters *w = m->waiters;
    if (w && w->period != period)
        return 0;
    if (!w) {
        size_t n = (size_t)s->users;
        w = m->waiters = xrealloc(NULL, 1, sizeof *w);
        *w = (struct wl_waiters){.period = period, .root = -1, .returning = -1};
        w->left = xrealloc(NULL, n, sizeof *w->left);
        w->right = xrealloc(NULL, n, sizeof *w->right);
        w->sz = xrealloc(NULL, n, sizeof *w->sz);
        w->entered = xrealloc(NULL, n, sizeof *w->entered);
        w->rank = xrealloc(NULL, n, sizeof *w->rank);
        w->order = xrealloc(NULL, n, sizeof *w->order);
    }
    if (m->user_iter[user] == 1) /* a first arrival: its order was reserved at the start */
        w->rank[user] = --w->first_rank;
    else if (w->returning != user || w->returning_event != m->stats.events)
        w->rank[user] = ++w->last_rank; /* else a woken user refused again keeps its rank */
    w->returning = -1;
    w->entered[user] = m->now;
    w->order[user] = evq_reserve(&m->events, 1); /* as if its try were queued now */
    w->last_entries = w->last_entry == m->now ? w->last_entries + 1 : 1;
    w->last_entry = m->now;
    w->left[user] = w->right[user] = -1;
    w->sz[user] = 1;
    int32_t a, b;
    wl_split(w, w->root, wl_phase(w, user), w->rank[user], &a, &b);
    w->root = wl_merge(w, wl_merge(w, a, user), b);
    w->n++;
    w->rounds += m->now / period;
    return 1;
}

/* The engine begins instant t: kept while it is less than a period old, at most
 * WL_SEEN_MAX of them (an older one is then forgotten and its successor answers for it). */
#define WL_SEEN_MAX (1u << 20)
static void wl_note(struct model *m, simtime t)
{
    struct wl_waiters *w = m->waiters;
    if (!w)
        return;
    while (w->seen_len && w->seen[w->seen_head].t < t - w->period) {
        w->seen_head = (w->seen_head + 1) % w->seen_cap;
        w->seen_len--;
    }
    if (w->seen_len == w->seen_cap && w->seen_cap < WL_SEEN_MAX) {
        uint32_t cap = w->seen_cap ? 2 * w->seen_cap : 1024;
        struct wl_instant *x = xrealloc(NULL, cap, sizeof *x);
        for (uint32_t i = 0; i < w->seen_len; i++)
            x[i] = w->seen[(w->seen_head + i) % w->seen_cap];
        free(w->seen);
        w->seen = x, w->seen_cap = cap, w->seen_head = 0;
    }
    if (w->seen_len == w->seen_cap) { /* at WL_SEEN_MAX: the oldest goes */
        w->seen_head = (w->seen_head + 1) % w->seen_cap;
        w->seen_len--;
    }
    w->seen[(w->seen_head + w->seen_len++) % w->seen_cap] = (struct wl_instant){t, m->events.seq};
}

/* The insertion order a try handled at t would have queued its next one with: a try waiting
 * for a period is among the first handled at its instant, so the order next to be taken when
 * the first instant at or after t began. */
static uint64_t wl_order_at(const struct wl_waiters *w, simtime t, uint64_t now_seq)
{
    uint32_t lo = 0, hi = w->seen_len; /* the first kept instant >= t */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (w->seen[(w->seen_head + mid) % w->seen_cap].t < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < w->seen_len ? w->seen[(w->seen_head + lo) % w->seen_cap].seq : now_seq;
}

/* Places free now: connections below maxConnections, then the backlog's. */
static int64_t wl_places(const struct model *m)
{
    int64_t conns = m->s->max_connections - m->conns;
    return (conns > 0 ? conns : 0) + m->s->accept_count - m->backlog.len;
}

/* Send the waiting users whose next tries come first, one per free place not already going
 * to a woken user; each tries at its next try after now (those up to now were refused). */
static void wl_wake(struct model *m)
{
    struct wl_waiters *w = m->waiters;
    if (m->now >= m->s->duration)
        return; /* no try from the end on (wl_arrive) */
    while (w->n > 0 && wl_places(m) > w->woken) {
        int32_t a, b, u;
        wl_split(w, w->root, m->now % w->period + 1, 0, &a, &b); /* b: phases after now's */
        if (b >= 0)
            u = wl_take_first(w, &b);
        else
            u = wl_take_first(w, &a);
        w->root = wl_merge(w, a, b);
        simtime e = w->entered[u];
        uint64_t tries = (uint64_t)((m->now - e) / w->period); /* refused, up to now */
        w->n--;
        w->rounds -= e / w->period;
        w->last_entries -= e == w->last_entry;
        w->left_tries += tries;
        m->user_iter[u] += (uint32_t)tries;
        w->woken++;
        uint64_t order = tries ? wl_order_at(w, e + (simtime)tries * w->period, m->events.seq)
                               : w->order[u]; /* its first try: queued when it began to wait */
        evq_push_keyed(&m->events, e + (simtime)(tries + 1) * w->period, order, EV_ARRIVE,
                       (uint32_t)u, 1);
    }
}

/* EV_ARRIVE with b = 1: a woken user's try (wl_wake). */
static void wl_woken_arrives(struct model *m, const struct event *e)
{
    if (!e->b)
        return;
    m->waiters->woken--;
    m->waiters->returning = (int32_t)e->a;
    m->waiters->returning_event = m->stats.events; /* this event: model_step counts it after */
}

/* Count the waiting users' tries at or before t (none at or after the end, as wl_arrive): a
 * try of user u at entered + kP <= t, so floor((t - entered) / P) of them; summed with
 * t = qP + r and entered = aP + b, it is n q - sum(a) - #{b > r}, less one for each user
 * who entered after t (at most one period after, so it counted -1). */
static void wl_count_to(struct model *m, simtime t)
{
    struct wl_waiters *w = m->waiters;
    if (t >= m->s->duration)
        t = m->s->duration - 1;
    int64_t waiting = (int64_t)w->n * (t / w->period) - w->rounds -
                      wl_count_after(w, t % w->period) + (t < w->last_entry ? w->last_entries : 0);
    uint64_t total = w->left_tries + (uint64_t)waiting, more = total - w->counted;
    m->stats.failed[FAIL_REFUSED] += more;
    m->stats.arrived += more;
    m->next_req_id += (uint32_t)more;
    w->counted = total;
}

/* All events up to now are handled: count the tries up to now. */
static void wl_settle(struct model *m)
{
    if (m->waiters)
        wl_count_to(m, m->now);
}

/* EV_SAMPLE at now: a try at now comes after it when the sample was queued first (its
 * interval is at least P), as the try, queued one period before, would then be. */
static void wl_settle_sample(struct model *m)
{
    if (m->waiters)
        wl_count_to(m, m->now - (m->s->sample_interval >= m->waiters->period));
}

static void wl_waiters_free(struct model *m);

/* What model_free frees beyond the engine's own: the waiting users (I.12), the fan-out's
 * histogram (I.9). */
static void model_free_more(struct model *m)
{
    wl_waiters_free(m);
    free(m->stats.scope.failed_lat);
}

static void wl_waiters_free(struct model *m)
{
    struct wl_waiters *w = m->waiters;
    if (!w)
        return;
    free(w->left);
    free(w->right);
    free(w->sz);
    free(w->entered);
    free(w->rank);
    free(w->order);
    free(w->seen);
    free(w);
    m->waiters = NULL;
}

/* ==== Part II. Tools ==== */

/* Tested by tests/test_sim.c (test_event_order*, test_histogram, test_distributions,
 * test_determinism). */

/* ---- II.1 Random streams ---- */

/* SplitMix64: a counter-based generator (passes BigCrush). Each request owns one 8-byte
 * state seeded from (scenario seed, user, iteration), so both models draw the same numbers
 * for the same request whatever order events happen in. */
static uint64_t rng_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rng_splitmix(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return rng_mix(*state);
}

/* A stream key from a seed and two integers; distinct tuples give unrelated streams. */
static uint64_t rng_key(uint64_t seed, uint64_t a, uint64_t b)
{
    return rng_mix(rng_mix(seed ^ 0x5851f42d4c957f2dull) + rng_mix(a + 0x632be59bd9b4e019ull) * 31 +
                   b);
}

/* xoshiro256**, for the few streams that are not per request (open-loop gaps). */
static uint64_t rng_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_xoshiro(uint64_t s[4])
{
    uint64_t result = rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rng_rotl(s[3], 45);
    return result;
}

static void rng_xoshiro_seed(uint64_t s[4], uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        s[i] = rng_splitmix(&seed);
}

/* A uniform double in the open interval (0,1): never 0, so log() is safe. */
static double rng_unit(uint64_t x)
{
    return ((double)(x >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* ---- II.2 Distributions ---- */

/* Inverse of the standard normal CDF (Acklam's rational approximation, |rel err| < 1.2e-9).
 * One uniform in, one normal out: every sample costs the same number of draws, which keeps
 * the two models' streams aligned. */
static double dist_probit(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    const double plow = 0.02425;
    if (p < plow || p > 1 - plow) {
        double q = sqrt(-2 * log(p < plow ? p : 1 - p));
        double x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
                   ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
        return p < plow ? x : -x;
    }
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

#define Z99 2.3263478740408408 /* probit(0.99) */

static simtime dist_sample(const struct dist *d, uint64_t *rng)
{
    double u = rng_unit(rng_splitmix(rng)), x;
    switch (d->shape) {
    case DIST_UNIFORM:
        x = d->a + (d->b - d->a) * u;
        break;
    case DIST_EXP:
        x = -d->a * log(u);
        break;
    case DIST_LOGNORMAL:
        x = exp(d->a + d->b * dist_probit(u));
        break;
    default:
        x = d->a;
        break;
    }
    return x < 0 ? 0 : x > 1e15 ? (simtime)1e15 : (simtime)(x + 0.5);
}

static double dist_mean(const struct dist *d)
{
    switch (d->shape) {
    case DIST_UNIFORM:
        return (d->a + d->b) / 2;
    case DIST_EXP:
        return d->a;
    case DIST_LOGNORMAL:
        return exp(d->a + d->b * d->b / 2);
    default:
        return d->a;
    }
}

/* P(X <= x), and a point beyond which P(X > x) < 1e-12: what E[max] of calls needs. */
static double dist_cdf(const struct dist *d, double x)
{
    switch (d->shape) {
    case DIST_UNIFORM:
        return x < d->a ? 0 : x >= d->b ? 1 : (x - d->a) / (d->b - d->a);
    case DIST_EXP:
        return x <= 0 ? 0 : 1 - exp(-x / d->a);
    case DIST_LOGNORMAL:
        return x <= 0 ? 0 : 0.5 * erfc(-(log(x) - d->a) / (d->b * M_SQRT2));
    default:
        return x >= d->a ? 1 : 0;
    }
}

/* The variance (ns^2) and third central moment (ns^3) of d: how spread and how skewed a time
 * is, what the steady-state verdict reads of a program (rep_moments). */
static void dist_moments(const struct dist *d, double *var, double *k3)
{
    double m = dist_mean(d), w = exp(d->b * d->b); /* lognormal: e^(sigma^2) */
    *var = d->shape == DIST_UNIFORM     ? (d->b - d->a) * (d->b - d->a) / 12
           : d->shape == DIST_EXP       ? m * m
           : d->shape == DIST_LOGNORMAL ? (w - 1) * m * m
                                        : 0;
    *k3 = d->shape == DIST_EXP         ? 2 * m * m * m
          : d->shape == DIST_LOGNORMAL ? (w + 2) * (w - 1) * (w - 1) * m * m * m
                                       : 0;
}

/* The time below which 99% of d's mean lies: the longest requests it must see to estimate
 * the mean (the p99 of the length-biased distribution: exp's is Gamma(2)'s, 6.638 means). */
static double dist_mass99(const struct dist *d)
{
    return d->shape == DIST_LOGNORMAL ? exp(d->a + d->b * (d->b + Z99))
           : d->shape == DIST_EXP     ? 6.638352 * d->a
           : d->shape == DIST_UNIFORM ? sqrt(d->a * d->a + 0.99 * (d->b * d->b - d->a * d->a))
                                      : d->a;
}

static double dist_end(const struct dist *d)
{
    return d->shape == DIST_LOGNORMAL ? exp(d->a + 7.1 * d->b)
           : d->shape == DIST_EXP     ? 28 * d->a
           : d->shape == DIST_UNIFORM ? d->b
                                      : d->a;
}

/* ---- II.3 Latency histogram ---- */

/* Latencies are recorded in nanoseconds: up to 2^44 ns (about 4.9 hours). */
#define HIST_MAX_MSB 43
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored                                                                     \
    "-Wunused-function" /* hist_merge: aggregator.c merges, sim does not */
/* ---- latency histogram: the same text in sim.c and aggregator.c (a test compares) ---- */

/* A log-linear histogram like HdrHistogram: values below 2^HIST_BITS are counted exactly;
 * above, each power of two is split into 2^HIST_BITS equal buckets, so a bucket is never
 * wider than 1/128 of its values: relative error < 0.8% at every percentile. The unit and the
 * range (HIST_MAX_MSB) are set by the file before this block.
 * Percentile rule, in both programs: the q-quantile is the top of the bucket holding the
 * ceil(q * count)-th smallest value, clamped to the largest value seen (HdrHistogram's rule). */
#define HIST_BITS    7
#define HIST_SUB     (1 << HIST_BITS)
#define HIST_BUCKETS ((HIST_MAX_MSB - HIST_BITS + 2) * HIST_SUB)

struct hist {
    uint64_t count;           /* values recorded */
    uint64_t sum;             /* their exact sum (for means: Little's law needs it) */
    uint64_t max;             /* largest value */
    uint64_t b[HIST_BUCKETS]; /* counts per bucket */
};

static int hist_index(uint64_t v)
{
    if (v >= ((uint64_t)1 << (HIST_MAX_MSB + 1)))
        v = ((uint64_t)1 << (HIST_MAX_MSB + 1)) - 1;
    if (v < HIST_SUB)
        return (int)v;
    int shift = (63 - __builtin_clzll(v)) - HIST_BITS;
    return (shift + 1) * HIST_SUB + (int)((v >> shift) - HIST_SUB);
}

/* The largest value that falls in bucket i (what HdrHistogram reports for a percentile). */
static uint64_t hist_bucket_top(int i)
{
    if (i < HIST_SUB)
        return (uint64_t)i;
    int shift = i / HIST_SUB - 1;
    uint64_t sub = (uint64_t)(i % HIST_SUB + HIST_SUB);
    return ((sub + 1) << shift) - 1;
}

static void hist_add(struct hist *h, uint64_t v)
{
    h->b[hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
}

static void hist_merge(struct hist *into, const struct hist *from)
{
    for (int i = 0; i < HIST_BUCKETS; i++)
        into->b[i] += from->b[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->max > into->max)
        into->max = from->max;
}

/* The value at quantile q (0..1], 0 when empty. */
static uint64_t hist_quantile(const struct hist *h, double q)
{
    if (!h->count)
        return 0;
    uint64_t rank = (uint64_t)ceil(q * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank)
            return hist_bucket_top(i) < h->max ? hist_bucket_top(i) : h->max;
    }
    return h->max;
}

/* ---- end of the shared latency histogram ---- */

/* ---- Student's t and the CSV columns: the same text in sim.c and aggregator.c ---- */

/* The 97.5% quantile of Student's t with df degrees of freedom: the factor of the two-sided
 * 95% interval of the mean of df + 1 independent measurements. The published table to 30;
 * beyond, the Cornish-Fisher expansion about the normal's 1.959964, within 0.001 of the exact
 * quantile there (t(40) = 2.021, t(120) = 1.980). NAN for df < 1: one measurement says nothing
 * of its spread. */
static double stat_t975(int df)
{
    static const double t[31] = {NAN,   12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                 2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                 2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                 2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1)
        return NAN;
    if (df <= 30)
        return t[df];
    double z = 1.959964, z3 = z * z * z;
    return z + (z3 + z) / (4.0 * df) + (5 * z3 * z * z + 16 * z3 + 3 * z) / (96.0 * df * df);
}

/* A column of a CSV that bench writes and sim --validate reads: one table per file, used by
 * the writer (the header, in this order, and each value's format) and by the reader (which
 * columns it needs, the range a value must lie in), so that the two cannot drift. A number
 * lies in [lo, hi], or is -1 where `unknown` says the bench may not know it (written "-1",
 * exactly); a word column (CSV_WORD) holds one of the words its reader lists. `digits`: the
 * decimals the writer prints, -1 for %g. `need`: a file without the column is refused. */
enum csv_type { CSV_NUMBER, CSV_WHOLE, CSV_WORD };
struct csv_col {
    const char *name;
    unsigned char type, need, unknown;
    signed char digits;
    double lo, hi;
};

/* An X-macro row per column, X(id, name, type, need, unknown, digits, lo, hi): the enum of
 * column indices and the table come from one list. */
#define CSV_ENUM(id, ...) id,
#define CSV_ROW(id, name, type, need, unknown, digits, lo, hi)                                     \
    {name, type, need, unknown, digits, lo, hi},

/* results.csv: a row per point of bench's grid (the mean of its runs, the median run's
 * figures), in this order. */
#define RES_COLUMNS(X)                                                                             \
    X(RES_USERS, "users", CSV_WHOLE, 1, 0, 0, 1, 1e7)                                              \
    X(RES_MODE, "mode", CSV_WORD, 1, 0, 0, 0, 0)                                                   \
    X(RES_POOL, "pool", CSV_WORD, 1, 0, 0, 0, 0)                                                   \
    X(RES_FANOUT, "fanout", CSV_WHOLE, 1, 0, 0, 1, 1e6)                                            \
    X(RES_DELAY_MS, "delay_ms", CSV_NUMBER, 1, 0, 0, 0, 3.6e6)                                     \
    X(RES_THROUGHPUT, "throughput_rps", CSV_NUMBER, 1, 0, 2, 0, 1e12)                              \
    X(RES_P50, "p50_ms", CSV_NUMBER, 1, 0, 3, 0, 1e12)                                             \
    X(RES_P90, "p90_ms", CSV_NUMBER, 0, 0, 3, 0, 1e12)                                             \
    X(RES_P99, "p99_ms", CSV_NUMBER, 1, 0, 3, 0, 1e12)                                             \
    X(RES_THREADS, "peak_threads", CSV_WHOLE, 1, 0, 0, 0, 1e12)                                    \
    X(RES_RSS, "peak_rss_bytes", CSV_WHOLE, 1, 0, 0, 0, 1e15)                                      \
    X(RES_CPU_US, "cpu_us_per_req", CSV_NUMBER, 0, 1, 1, 0, 1e12)                                  \
    X(RES_IDEAL, "ideal_rps", CSV_NUMBER, 0, 0, 1, 0, 1e12)                                        \
    X(RES_ERRORS, "errors", CSV_WHOLE, 0, 0, 0, 0, 1e15)                                           \
    X(RES_OTHER_CPU_US, "other_cpu_us_per_req", CSV_NUMBER, 0, 1, 1, 0, 1e12)                      \
    X(RES_RUNS, "runs", CSV_WHOLE, 0, 0, 0, 1, 1e6)                                                \
    X(RES_CI_LOW, "throughput_ci95_low", CSV_NUMBER, 0, 0, 2, -1e12, 1e12)                         \
    X(RES_CI_HIGH, "throughput_ci95_high", CSV_NUMBER, 0, 0, 2, 0, 1e12)                           \
    X(RES_MIN, "throughput_min", CSV_NUMBER, 0, 0, 2, 0, 1e12)                                     \
    X(RES_MAX, "throughput_max", CSV_NUMBER, 0, 0, 2, 0, 1e12)                                     \
    X(RES_CLOSE_FIRST, "close_first", CSV_WORD, 0, 0, 0, 0, 0)                                     \
    X(RES_PORT_LOW, "port_low", CSV_WHOLE, 0, 0, 0, 1, 65535)                                      \
    X(RES_PORT_HIGH, "port_high", CSV_WHOLE, 0, 0, 0, 1, 65535)                                    \
    X(RES_TW_REUSE, "tw_reuse", CSV_WHOLE, 0, 0, 0, 0, 2)                                          \
    X(RES_FAILED_NO_PORT, "failed_no_port", CSV_NUMBER, 0, 1, 1, 0, 1e15)                          \
    X(RES_FAILED, "failed", CSV_NUMBER, 0, 1, 1, 0, 1e15)                                          \
    X(RES_ALLOC, "alloc_bytes_per_req", CSV_NUMBER, 0, 1, 0, 0, 1e15)                              \
    X(RES_RAMPUP, "rampup_s", CSV_NUMBER, 0, 0, -1, 0, 3600)                                       \
    X(RES_WARMUP, "warmup_s", CSV_NUMBER, 0, 0, -1, 0, 3600)                                       \
    X(RES_WINDOW, "window_s", CSV_NUMBER, 0, 0, -1, 0.01, 3600)                                    \
    X(RES_STEAL, "steal_pct", CSV_NUMBER, 0, 1, 1, 0, 100)                                         \
    X(RES_FOREIGN, "foreign_pct", CSV_NUMBER, 0, 1, 1, 0, 100)                                     \
    X(RES_JIT_WARMUP, "jit_warmup_s", CSV_NUMBER, 0, 0, -1, 0, 3600)                               \
    X(RES_SERVER, "server", CSV_WORD, 0, 0, 0, 0, 0)                                               \
    X(RES_ON_FAILURE, "on_failure", CSV_WORD, 0, 0, 0, 0, 0)                                       \
    X(RES_FAIL_SHARE, "fail_share", CSV_NUMBER, 0, 0, 3, 0, 1)                                     \
    X(RES_FAIL_AFTER_MS, "fail_after_ms", CSV_NUMBER, 0, 0, -1, 0, 3.6e6)                          \
    X(RES_FAILED_P50, "failed_p50_ms", CSV_NUMBER, 0, 1, 3, 0, 1e12)                               \
    X(RES_FAILED_P99, "failed_p99_ms", CSV_NUMBER, 0, 1, 3, 0, 1e12)                               \
    X(RES_CALLS, "calls_per_req", CSV_NUMBER, 0, 1, 3, 0, 1e6)                                     \
    X(RES_CALL_MS, "call_ms_per_req", CSV_NUMBER, 0, 1, 3, 0, 1e12)                                \
    X(RES_AUTH, "auth", CSV_WORD, 0, 0, 0, 0, 0)                                                   \
    X(RES_SERVER_P50, "server_p50_ms", CSV_NUMBER, 0, 1, 3, 0, 1e12)                               \
    X(RES_SERVER_P99, "server_p99_ms", CSV_NUMBER, 0, 1, 3, 0, 1e12)
enum res_col { RES_COLUMNS(CSV_ENUM) RES_N };
static const struct csv_col res_cols[RES_N] = {RES_COLUMNS(CSV_ROW)};

/* bench --timeline: a row per second of each run of each cell, in this order. */
#define TL_COLUMNS(X)                                                                              \
    X(TLC_SERVER, "server", CSV_WORD, 1, 0, 0, 0, 0)                                               \
    X(TLC_MODE, "mode", CSV_WORD, 1, 0, 0, 0, 0)                                                   \
    X(TLC_POOL, "pool", CSV_WORD, 1, 0, 0, 0, 0)                                                   \
    X(TLC_CLOSE_FIRST, "close_first", CSV_WORD, 1, 0, 0, 0, 0)                                     \
    X(TLC_USERS, "users", CSV_WHOLE, 1, 0, 0, 1, 1e7)                                              \
    X(TLC_FANOUT, "fanout", CSV_WHOLE, 1, 0, 0, 1, 1e6)                                            \
    X(TLC_DELAY_MS, "delay_ms", CSV_NUMBER, 1, 0, -1, 0, 3.6e6)                                    \
    X(TLC_PORT_LOW, "port_low", CSV_WHOLE, 1, 0, 0, 1, 65535)                                      \
    X(TLC_PORT_HIGH, "port_high", CSV_WHOLE, 1, 0, 0, 1, 65535)                                    \
    X(TLC_TW_REUSE, "tw_reuse", CSV_WHOLE, 1, 0, 0, 0, 2)                                          \
    X(TLC_RAMPUP, "rampup_s", CSV_NUMBER, 0, 0, -1, 0, 3600)                                       \
    X(TLC_RUN, "run", CSV_WHOLE, 1, 0, 0, 1, 1e6)                                                  \
    X(TLC_T, "t_s", CSV_WHOLE, 1, 0, 0, 1, 3600)                                                   \
    X(TLC_SERVED, "served", CSV_WHOLE, 1, 0, 0, 0, 1e12)                                           \
    X(TLC_FAILED, "failed", CSV_WHOLE, 1, 0, 0, 0, 1e12)                                           \
    X(TLC_NO_PORT, "failed_no_port", CSV_WHOLE, 1, 1, 0, 0, 1e12)                                  \
    X(TLC_TIME_WAIT, "time_wait", CSV_WHOLE, 1, 0, 0, 0, 1e12)
enum tl_col { TL_COLUMNS(CSV_ENUM) TLC_N };
static const struct csv_col tl_cols[TLC_N] = {TL_COLUMNS(CSV_ROW)};

/* ---- end of Student's t and the CSV columns ---- */
#pragma GCC diagnostic pop

/* A model's histograms live on the heap (each is tens of KiB); model_init makes them. */
static struct hist *hist_new(void)
{
    struct hist *h = xrealloc(NULL, 1, sizeof *h);
    hist_clear(h);
    return h;
}

static void hist_clear(struct hist *h)
{
    memset(h, 0, sizeof *h);
}

/* ---- II.4 Event queue ---- */

/* Events come out in (time, insertion order): ties keep the order they were pushed in, so a
 * run is deterministic. The simplest correct queue is the binary heap (evq_heap_push,
 * evq_heap_pop); a reader may stop there.
 *
 * FOR SPEED ONLY: what it costs the reader
 *   Lanes. Many events are pushed in time order within their stream (a constant-latency
 *   service's answers, users' arrivals, wake-ups, timers); a ring buffer per stream is then
 *   already sorted, so pushing and popping it are O(1) instead of O(log n). Which lane an
 *   event goes to changes only the speed, never the order. Cost: evq_push_lane, evq_peek
 *   comparing the heap's top with every busy lane's head (a bit mask says which), and
 *   the `from` of evq_pop_from. evq_peek reads the heads' keys from `first`, one array of
 *   16-byte keys (four cache lines) instead of a pointer chase per lane; evq_push_lane and
 *   evq_pop_from keep it when a lane's head changes.
 *   Packed type. The event's type rides in the low 8 bits of its insertion sequence
 *   (`order`), so an event is 24 bytes and a tie is one integer compare. Cost: ev_type_of.
 */

static int evq_less(const struct event *x, const struct event *y)
{
    return x->t < y->t || (x->t == y->t && x->order < y->order);
}

/* 1 if x comes after y, else 0, without a branch: which of two children is the lesser is a
 * coin toss the branch predictor loses half the time, at every level of a pop. */
static size_t evq_later(const struct event *x, const struct event *y)
{
    return (size_t)((y->t < x->t) | ((y->t == x->t) & (y->order < x->order)));
}

/* Put e in the heap's hole at i and move it up past the parents it precedes. */
/* Always inlined (evq_heap_push says why). */
static inline __attribute__((always_inline)) void evq_heap_sift_up(struct evq *q, size_t i,
                                                                   struct event e)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!evq_less(&e, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = e;
}

/* Always inlined, as is evq_heap_sift_up: a 24-byte struct passed by value goes through
 * the stack, and reading it back in 16 bytes from two 8-byte stores stalls (no store
 * forwarding) on every push. */
static inline __attribute__((always_inline)) void evq_heap_push(struct evq *q, struct event e)
{
    if (q->nheap == q->capheap) {
        q->capheap = q->capheap ? q->capheap * 2 : 1024;
        q->heap = realloc(q->heap, q->capheap * sizeof *q->heap);
        if (!q->heap) {
            perror("sim: event queue");
            exit(1);
        }
    }
    evq_heap_sift_up(q, q->nheap++, e);
}

/* The root's hole goes down to a leaf along the lesser children, then the last element
 * fills it and sifts up (Floyd's bottom-up heapsort): the last element came from the bottom
 * and nearly always belongs there, so this is one compare a level instead of two. */
static struct event evq_heap_pop(struct evq *q)
{
    struct event top = q->heap[0], last = q->heap[--q->nheap];
    size_t i = 0, n = q->nheap;
    if (!n)
        return top;
    size_t child;
    for (; (child = 2 * i + 1) + 1 < n; i = child) { /* the hole down past two children */
        __builtin_prefetch(&q->heap[4 * i + 3]);     /* the 4 grandchildren (2 lines), one of */
        __builtin_prefetch(&q->heap[4 * i + 6]);     /* which is next: fetched while we compare */
        child += evq_later(&q->heap[child], &q->heap[child + 1]);
        q->heap[i] = q->heap[child];
    }
    if (child < n) { /* a last, lone child */
        q->heap[i] = q->heap[child];
        i = child;
    }
    evq_heap_sift_up(q, i, last); /* `last` up from the leaf's hole */
    return top;
}

static struct event evq_make(struct evq *q, simtime t, int type, uint32_t a, uint32_t b)
{
    q->len++;
    return (struct event){t, (q->seq++ << 8) | (uint64_t)type, a, b};
}

static void evq_push(struct evq *q, simtime t, int type, uint32_t a, uint32_t b)
{
    evq_heap_push(q, evq_make(q, t, type, a, b));
}

/* n insertion orders taken now (the first is returned) for events pushed later with
 * evq_push_keyed or evq_push_lane_keyed: among events at the same time each then comes out
 * as if pushed now. */
static uint64_t evq_reserve(struct evq *q, uint64_t n)
{
    uint64_t first = q->seq;
    q->seq += n;
    return first;
}

/* To the heap, not a lane: it comes after events pushed since its order was taken. */
static void evq_push_keyed(struct evq *q, simtime t, uint64_t seq, int type, uint32_t a, uint32_t b)
{
    q->len++;
    evq_heap_push(q, (struct event){t, (seq << 8) | (uint64_t)type, a, b});
}

/* A full lane doubles in place (realloc: a large block is remapped, not copied beside the
 * old one, so the peak RSS stays that of the lane). Full, the ring runs from head to the end
 * and on from 0 to head - 1; that wrapped part moves behind the old end, and the ring is
 * then head .. old + head - 1, in order, inside the new capacity. */
static void evq_lane_grow(struct evq_lane *l)
{
    uint32_t old = l->cap, cap = old ? 2 * old : 256;
    struct event *buf = realloc(l->buf, cap * sizeof *buf);
    if (!buf) {
        perror("sim: event queue");
        exit(1);
    }
    if (l->head) /* never when old = 0: a lane not yet allocated has head 0 */
        memcpy(buf + old, buf, l->head * sizeof *buf);
    l->buf = buf;
    l->cap = cap;
}

/* An event (counted in q->len, its order taken) to a lane when it keeps the lane sorted
 * (O(1)); otherwise to the heap. Which lane an event goes to changes only speed: every event keeps
 * its (time, insertion order) key. */
static void evq_lane_put(struct evq *q, int lane, simtime t, uint64_t order, uint32_t a,
                         uint32_t b) /* the fields, not a struct: they stay in registers */
{
    struct evq_lane *l = &q->lane[lane]; /* 0 <= lane < EVQ_LANES */
    if (l->len && l->buf[(l->head + l->len - 1) & (l->cap - 1)].t > t) {
        evq_heap_push(q, (struct event){t, order, a, b});
        return;
    }
    if (l->len == l->cap)
        evq_lane_grow(l);
    if (!l->len) { /* it is the lane's head */
        q->first[lane] = (struct evq_key){t, order};
        q->busy |= 1u << lane;
    }
    l->buf[(l->head + l->len++) & (l->cap - 1)] = (struct event){t, order, a, b};
    q->nlaned++;
}

/* To a lane with an order taken earlier (evq_reserve). */
static void evq_push_lane_keyed(struct evq *q, int lane, simtime t, uint64_t seq, int type,
                                uint32_t a, uint32_t b)
{
    q->len++;
    evq_lane_put(q, lane, t, (seq << 8) | (uint64_t)type, a, b);
}

static void evq_push_lane(struct evq *q, int lane, simtime t, int type, uint32_t a, uint32_t b)
{
    evq_push_lane_keyed(q, lane, t, q->seq++, type, a, b);
}

/* The next event: the least of the heap's top and the lanes' heads. -1: the heap, else a
 * lane; NULL when empty. */
static const struct event *evq_peek(const struct evq *q, int *from)
{
    uint32_t busy = q->busy;
    int best = -1;
    struct evq_key k;
    *from = -1;
    if (q->nheap)
        k = (struct evq_key){q->heap[0].t, q->heap[0].order};
    else if (busy) { /* the first busy lane's head to beat */
        best = __builtin_ctz(busy);
        k = q->first[best];
        busy &= busy - 1;
    } else
        return NULL;
    for (; busy; busy &= busy - 1) { /* the lowest busy lane first */
        int i = __builtin_ctz(busy);
        const struct evq_key *h = &q->first[i];
        if (h->t < k.t || (h->t == k.t && h->order < k.order)) {
            k = *h;
            best = i;
        }
    }
    *from = best;
    return evq_head(q, best);
}

/* The next event of the heap (from < 0) or of lane `from`; NULL when it has none. */
static const struct event *evq_head(const struct evq *q, int from)
{
    if (from < 0)
        return q->nheap ? &q->heap[0] : NULL;
    const struct evq_lane *l = &q->lane[from];
    return l->len ? &l->buf[l->head] : NULL;
}

/* Remove the event evq_peek found, from where it said. */
static struct event evq_pop_from(struct evq *q, int from)
{
    q->len--;
    if (from < 0)
        return evq_heap_pop(q);
    struct evq_lane *l = &q->lane[from];
    struct event e = l->buf[l->head];
    l->head = (l->head + 1) & (l->cap - 1);
    if (!--l->len)
        q->busy &= ~(1u << from);
    else /* the new head's key, for evq_peek */
        q->first[from] = (struct evq_key){l->buf[l->head].t, l->buf[l->head].order};
    q->nlaned--;
    return e;
}

static void evq_free(struct evq *q)
{
    free(q->heap);
    for (int i = 0; i < EVQ_LANES; i++)
        free(q->lane[i].buf);
    memset(q, 0, sizeof *q);
}

static int ev_type_of(const struct event *e)
{
    return (int)(e->order & 0xff);
}

/* ---- II.5 Storage ---- */

/* Requests, calls and threads live in growable arrays and name each other by index.
 *
 * FOR SPEED ONLY: what it costs the reader
 *   Index-linked storage. A slot is reused through a free list threaded through its first
 *   field, and FIFOs link slots through that same `next` field, so 100,000 requests cost no
 *   malloc each and a FIFO push is two stores. Cost: slot_take may move the array, so code
 *   holds indices (int32_t r, t, c), never a pointer across an allocation, and takes
 *   &m->req[r] again after anything that may allocate.
 *   Prefetch. A pop asks the cache for the FIFO's new head (fifo_prefetch): the next pop
 *   reads its `next` and the request is then run. With 100,000 virtual threads queued for
 *   2 carriers the requests outgrow the L2 cache, and that read (vt_dequeue) was the
 *   engine's top cache miss; now it is fetched while other events run. Cost: a line in
 *   fifo_pop.
 */

static void *xrealloc(void *p, size_t n, size_t size)
{
    if (n && size > SIZE_MAX / n) {
        fprintf(stderr, "sim: allocation too large\n");
        exit(1);
    }
    void *q = realloc(p, n * size > 0 ? n * size : 1);
    if (!q) {
        fprintf(stderr, "sim: out of memory (%zu bytes)\n", n * size);
        exit(1);
    }
    return q;
}

/* Zeroed, or the program ends with the same message as xrealloc's. */
static void *xcalloc(size_t n, size_t size)
{
    void *p = xrealloc(NULL, n, size);
    memset(p, 0, n * size);
    return p;
}

/* FOR SPEED ONLY: the new part of a grown array of 1 MiB or more is mapped in one call
 * instead of a page fault per 4 KiB page as slots are first taken. At 100,000 users most of a
 * run's page faults were those of its request arrays, each a trip into the kernel (the
 * figures are in the commit that added this). Cost: the RSS counts the
 * whole grown part at once (an array is at most half unused). Advice only: an error (a
 * kernel before 5.14) changes nothing. */
static void slot_populate(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)p + page - 1) / page * page;
    uintptr_t to = ((uintptr_t)p + bytes) / page * page;
    if (bytes >= ((size_t)1 << 20) && to > from)
        madvise((void *)from, to - from, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)bytes;
#endif
}

/* Take a slot from a growable array with a free list threaded through `next`. */
static int32_t slot_take(void **arr, int32_t *n, int32_t *cap, int32_t *freelist, size_t size)
{
    if (*freelist >= 0) {
        int32_t i = *freelist;
        *freelist = *(int32_t *)((char *)*arr + (size_t)i * size);
        if (*freelist >= 0) /* the next take reads it, as a FIFO's next pop (fifo_prefetch) */
            fifo_prefetch(*arr, size, *freelist);
        return i;
    }
    if (*n == *cap) {
        if (*cap > INT32_MAX / 2) {
            fprintf(stderr, "sim: too many objects\n");
            exit(1);
        }
        size_t was = (size_t)*cap * size;
        *cap = *cap ? *cap * 2 : 256;
        *arr = xrealloc(*arr, (size_t)*cap, size);
        slot_populate((char *)*arr + was, (size_t)*cap * size - was);
    }
    return (*n)++;
}

static void slot_give(void *arr, int32_t *freelist, size_t size, int32_t i)
{
    *(int32_t *)((char *)arr + (size_t)i * size) = *freelist;
    *freelist = i;
}

/* Intrusive FIFOs over arrays whose elements start with `int32_t next`. */
/* Ask the cache for element i (both ends: an element may straddle two lines). */
PREFETCH_FN void fifo_prefetch(const void *base, size_t size, int32_t i)
{
    const char *p = (const char *)base + (size_t)i * size;
    __builtin_prefetch(p);
    __builtin_prefetch(p + size - 1);
}

static int32_t *fifo_link(void *base, size_t size, int32_t i)
{
    return (int32_t *)((char *)base + (size_t)i * size);
}

static void fifo_push(struct fifo *q, void *base, size_t size, int32_t i)
{
    *fifo_link(base, size, i) = -1;
    if (q->tail >= 0)
        *fifo_link(base, size, q->tail) = i;
    else
        q->head = i;
    q->tail = i;
    q->len++;
}

static int32_t fifo_pop(struct fifo *q, void *base, size_t size)
{
    int32_t i = q->head;
    if (i < 0)
        return -1;
    q->head = *fifo_link(base, size, i);
    if (q->head < 0)
        q->tail = -1;
    else /* the next pop's element: see FOR SPEED ONLY above */
        fifo_prefetch(base, size, q->head);
    q->len--;
    return i;
}

/* Take i out of q wherever it is (a walk from the head: for the rare cancellation). */
static void fifo_remove(struct fifo *q, void *base, size_t size, int32_t i)
{
    int32_t prev = -1;
    for (int32_t j = q->head; j >= 0 && j != i; j = *fifo_link(base, size, j))
        prev = j;
    int32_t after = *fifo_link(base, size, i);
    if (prev < 0)
        q->head = after;
    else
        *fifo_link(base, size, prev) = after;
    if (q->tail == i)
        q->tail = prev;
    q->len--;
}

static int32_t req_alloc(struct model *m)
{
    return slot_take((void **)&m->req, &m->nreq, &m->capreq, &m->free_req, sizeof *m->req);
}

static int32_t call_alloc(struct model *m)
{
    return slot_take((void **)&m->call, &m->ncall, &m->capcall, &m->free_call, sizeof *m->call);
}

/* A free call slot has req -1: the window tells live calls from free ones by it. */
static void call_free(struct model *m, int32_t c)
{
    m->call[c].req = -1;
    slot_give(m->call, &m->free_call, sizeof *m->call, c);
}

/* ---- II.6 Files ---- */

/* Every file sim reads must be a regular file: opening a FIFO waits for a writer, a device
 * such as /dev/zero never ends, so anything else is refused before the first read. Every
 * file it writes is checked when it is closed (rep_close): a full disk is an error with the
 * path, never a silent empty file. */

/* What a file that is not a regular one is, for the message. */
static const char *io_file_type(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a file";
}

/* Open `path` to read. O_NONBLOCK so that a FIFO's open does not wait for a writer; then
 * fstat, and only a regular file is read (in blocking mode again). Returns the stream, or
 * NULL with "PATH: why" in err. */
static FILE *io_open_in(const char *path, char *err, size_t errlen)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (%s)", path, io_file_type(st.st_mode));
        close(fd);
        return NULL;
    }
    FILE *f = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

/* Open `path` to write, created or emptied. O_NONBLOCK so that a FIFO nobody reads is
 * refused (ENXIO) instead of waited on; the writes themselves block as usual. Returns the
 * stream, or NULL after a message. */
static FILE *io_open_out(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
    FILE *f = NULL;
    if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0)
        f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        fprintf(stderr, "sim: cannot write %s: %s\n", path,
                e == ENXIO ? "a FIFO that nobody reads" : strerror(e));
        if (fd >= 0)
            close(fd);
    }
    return f;
}

/* ==== Part III. Scenario files ==== */

/* Tested by tests/test_sim.c (test_shipped_scenarios, test_scenario_claims, test_bad_input,
 * test_not_text, test_calibration_file), tests/test_cli.sh and make fuzz (fuzz_scenario). */

/* ---- III.1 Keys ---- */

/* FORMAT
 *   One `key = value` per line; `#` starts a comment; blank lines are ignored. Later lines
 *   and `--set key=value` override earlier ones. Services are declared by using them:
 *   `service.inventory.latency = lognormal(40ms, 120ms)` creates service `inventory`.
 *
 * VALUES
 *   time      a number with a unit: 250ns, 20us, 50ms, 1.5s (0 needs no unit)
 *   bytes     a number with a unit: 512B, 64KiB, 1MiB, 2GiB (or KB, MB, GB = 1000s)
 *   dist      a random time: 5ms (constant) | const(5ms) | uniform(1ms, 9ms) | exp(5ms) (mean)
 *             | lognormal(40ms, 120ms) (its p50 and p99)
 *   program   steps run by every request, left to right:
 *               program := item { item }
 *               item    := cpu(dist) | io(dist) | call(NAME) | par(NAME {, NAME})
 *                        | sync { item { item } } | item*COUNT
 *             cpu: CPU work on the request's thread; call: a blocking downstream call;
 *             par: calls at once, waiting for all; io: blocking that the JDK compensates
 *             (Object.wait, file I/O); sync: a `synchronized` block; *COUNT repeats an item.
 *
 * HOW TO ADD A SCENARIO KEY
 *   Add a field to struct scenario (I.1) and one row to scn_keys[]: name, type, field,
 *   default, range, doc. Parsing, --set, --keys and the docs all come from that row.
 */

enum key_type {
    K_STR,
    K_U64,
    K_INT,
    K_LONG,
    K_DOUBLE,
    K_TIME,
    K_DIST,
    K_BYTES,
    K_BOOL,
    K_PROGRAM,
    K_ENUM /* one of `names`, stored as its index in an int */
};

struct scn_key {
    const char *name;
    uint8_t type;
    size_t off;      /* offset in struct scenario (or struct service_cfg for service keys) */
    const char *def; /* default, parsed by the same code as a file's value */
    double min, max; /* allowed range of numbers (times in ns, bytes) */
    const char *doc;
};

/* `auth`: the bearer token checked on every request, by its signature's algorithm (the
 * aggregator's serve --auth, Spring Security's resource server). Its CPU is auth_cpu[auth]. */
enum auth_alg { AUTH_OFF, AUTH_HS256, AUTH_RS256, AUTH_N };
static const char *const auth_names[] = {"off", "hs256", "rs256", NULL};
_Static_assert(sizeof((struct scenario *)0)->auth_cpu / sizeof(simtime) == AUTH_N,
               "struct scenario's auth_cpu[] has a cost per enum auth_alg");

/* K_ENUM keys' words, by the key's field (NULL-terminated lists). */
static const struct {
    size_t off;
    const char *const *names;
} scn_enums[] = {
    {offsetof(struct scenario, vt_sched), vt_policy_names},
    {offsetof(struct scenario, close_first), net_closer_names},
    {offsetof(struct scenario, on_failure), on_failure_names},
    {offsetof(struct scenario, auth), auth_names},
};

#define SK(field) offsetof(struct scenario, field)
static const struct scn_key scn_keys[] = {
    {"name", K_STR, SK(name), "unnamed", 0, 0, "title shown in reports and the window"},
    {"seed", K_U64, SK(seed), "1", 0, 0, "random seed; the same seed gives byte-identical output"},
    {"duration", K_TIME, SK(duration), "10s", 1e6, 86400e9, "simulated time; no arrivals after it"},
    {"warmup", K_TIME, SK(warmup), "1s", 0, 86400e9,
     "statistics ignore requests that complete before it"},
    {"sample_interval", K_TIME, SK(sample_interval), "100ms", 1e6, 3600e9,
     "time-series resolution (the window and --series keep at most 1,000,000 rows)"},
    {"users", K_LONG, SK(users), "100", 0, 10e6,
     "closed loop: concurrent users (0 = open loop at `rate`)"},
    {"rate", K_DOUBLE, SK(rate), "0", 0, 10e6, "open loop: Poisson arrivals per second"},
    {"think", K_DIST, SK(think), "0", 0, 3600e9,
     "closed loop: a user's pause between an answer and its next request"},
    {"rampup", K_TIME, SK(rampup), "0", 0, 3600e9,
     "closed loop: users start evenly spread over this time"},
    {"retry_after", K_TIME, SK(retry_after), "1s", 1e3, 3600e9,
     "a user whose request failed waits this long more before retrying"},
    {"program", K_PROGRAM, SK(program_text), "cpu(100us) call(A) call(B) call(C) cpu(50us)", 0, 0,
     "what each request does (see FORMAT)"},
    {"cores", K_INT, SK(cores), "2", 1, 1024, "CPU cores C of the server"},
    {"runtime_threads", K_INT, SK(runtime_threads), "22", 0, 10000,
     "JVM's own threads (GC, JIT, acceptor, poller), counted in both models"},
    {"platform.runtime_threads", K_INT, SK(model_threads[0]), "-1", -1, 10000,
     "platform: runtime threads if not runtime_threads (-1)"},
    {"virtual.runtime_threads", K_INT, SK(model_threads[1]), "-1", -1, 10000,
     "virtual: runtime threads if not runtime_threads (-1)"},
    {"os.ctx_switch", K_TIME, SK(ctx_switch), "3us", 0, 1e9,
     "CPU cost of switching a core to another OS thread"},
    {"os.timeslice", K_TIME, SK(timeslice), "3ms", 1e4, 1e10,
     "OS scheduler quantum before a runnable thread is preempted"},
    {"os.wakeup", K_TIME, SK(wakeup), "2us", 0, 1e9,
     "CPU a platform thread spends returning from a blocking call (the kernel wakes it)"},
    {"os.wakeup_latency", K_TIME, SK(wakeup_latency), "0", 0, 1e9,
     "from signalling an idle pool thread until it runs (a wake-up on another CPU)"},
    {"platform.release_cpu", K_TIME, SK(release_cpu), "0", 0, 1e9,
     "CPU a pool thread spends after writing the response before it is idle again (re-arm the "
     "connection, take the pool's lock); it runs after the threads already waiting for a core"},
    {"os.thread_create", K_TIME, SK(thread_create), "50us", 0, 1e9,
     "CPU cost of creating an OS thread"},
    {"os.stack_reserved", K_BYTES, SK(thread_stack_reserved), "1MiB", 4096, 1e10,
     "address space reserved per OS thread (-Xss)"},
    {"os.stack_rss", K_BYTES, SK(thread_stack_rss), "64KiB", 0, 1e10,
     "memory committed per OS thread (touched stack, TLS, kernel)"},
    {"platform.cpu_per_request", K_TIME, SK(cpu_per_request[0]), "0", 0, 1e9,
     "platform: CPU per request beyond its program (accept, parse, answer)"},
    {"platform.cpu_per_call", K_TIME, SK(cpu_per_call[0]), "0", 0, 1e9,
     "platform: CPU per downstream call beyond its program (socket syscalls)"},
    {"virtual.cpu_per_request", K_TIME, SK(cpu_per_request[1]), "0", 0, 1e9,
     "virtual: CPU per request beyond its program"},
    {"virtual.cpu_per_call", K_TIME, SK(cpu_per_call[1]), "0", 0, 1e9,
     "virtual: CPU per downstream call beyond its program (syscalls, epoll)"},
    {"auth", K_ENUM, SK(auth), "off", 0, 0,
     "a bearer token (JWT) checked on every request before its program, as Spring Security's "
     "BearerTokenAuthenticationFilter does before the controller: off, hs256 (an HMAC) or rs256 "
     "(an RSA signature, the resource server's default); it costs auth.hs256_cpu or "
     "auth.rs256_cpu"},
    {"auth.hs256_cpu", K_TIME, SK(auth_cpu[AUTH_HS256]), "5us", 0, 1e9,
     "CPU of one HS256 token check: HMAC-SHA256, base64url, the claims (set by calibration)"},
    {"auth.rs256_cpu", K_TIME, SK(auth_cpu[AUTH_RS256]), "50us", 0, 1e9,
     "CPU of one RS256 token check: an RSA-2048 signature verified, base64url, the claims (set "
     "by calibration)"},
    {"cpu.cache_pressure", K_DOUBLE, SK(cache_pressure), "0", 0, 1,
     "the per-request, per-call and connect CPU grow by this fraction per request in service "
     "(their state competes for the caches)"},
    {"mem.base", K_BYTES, SK(mem_base), "0", 0, 1e12,
     "process RSS with no load (for the predicted RSS)"},
    {"mem.per_request", K_BYTES, SK(mem_per_request), "0", 0, 1e9,
     "memory per request being served: buffers, a virtual thread's frames (predicted RSS)"},
    {"mem.per_connection", K_BYTES, SK(mem_per_connection), "0", 0, 1e9,
     "memory per open connection, served or queued (predicted RSS)"},
    {"platform.max_threads", K_INT, SK(max_threads), "200", 1, 100000,
     "Tomcat maxThreads: the pool's ceiling"},
    {"platform.min_spare", K_INT, SK(min_spare), "10", 0, 100000,
     "Tomcat minSpareThreads: threads created at start and never retired"},
    {"platform.max_connections", K_INT, SK(max_connections), "8192", 1, 10000000,
     "Tomcat maxConnections (both models)"},
    {"platform.accept_count", K_INT, SK(accept_count), "100", 0, 10000000,
     "Tomcat acceptCount: listen backlog beyond maxConnections (both models)"},
    {"platform.max_queue", K_INT, SK(max_queue), "0", 0, 10000000,
     "executor queue bound, 0 = unbounded as in Tomcat; beyond it 503"},
    {"platform.idle_timeout", K_TIME, SK(idle_timeout), "60s", 1e6, 86400e9,
     "a pool thread idle this long exits (down to min_spare)"},
    {"virtual.parallelism", K_INT, SK(parallelism), "0", 0, 1024,
     "carriers (0 = cores, as the JDK)"},
    {"virtual.max_pool_size", K_INT, SK(max_pool_size), "256", 1, 32767,
     "carriers at most, counting compensation for io()"},
    {"virtual.create", K_TIME, SK(vt_create), "1us", 0, 1e9,
     "CPU cost of starting a virtual thread"},
    {"virtual.park", K_TIME, SK(vt_park), "1us", 0, 1e9,
     "CPU cost of unmounting and parking (freezing the stack)"},
    {"virtual.unpark", K_TIME, SK(vt_unpark), "1us", 0, 1e9,
     "CPU cost of unparking and mounting again (thawing)"},
    {"virtual.carrier_keepalive", K_TIME, SK(carrier_keepalive), "30s", 1e6, 86400e9,
     "an idle compensating carrier exits after this"},
    {"virtual.stack_bytes", K_BYTES, SK(vt_stack_bytes), "5KiB", 0, 1e9,
     "heap memory per virtual thread (its stack chunks)"},
    {"virtual.jep491", K_BOOL, SK(jep491), "0", 0, 1,
     "1 = JDK 24: blocking in synchronized unmounts instead of pinning"},
    {"virtual.scheduler", K_ENUM, SK(vt_sched), "steal", 0, 0,
     "steal: a run queue per carrier, an idle carrier steals (Loom's ForkJoinPool); fifo: one "
     "run queue for all carriers; home: a queue per carrier, never stolen from"},
    {"net.port_low", K_INT, SK(port_low), "32768", 1, 65535, "ephemeral port range, low end"},
    {"net.port_high", K_INT, SK(port_high), "60999", 1, 65535, "ephemeral port range, high end"},
    {"net.time_wait", K_TIME, SK(time_wait), "60s", 0, 3600e9,
     "how long a closed connection's port stays in TIME_WAIT"},
    {"net.connect_cpu", K_TIME, SK(connect_cpu), "0", 0, 1e9,
     "CPU a new TCP connection costs its caller (connect, close; set by calibration)"},
    {"net.call_latency", K_DIST, SK(call_latency), "0", 0, 3600e9,
     "added to every downstream call: the network stack (loopback) and scheduling delays"},
    {"net.tw_reuse", K_BOOL, SK(tw_reuse), "0", 0, 1,
     "1 = tcp_tw_reuse: a TIME_WAIT port older than 1 s may be reused"},
    {"net.close_first", K_ENUM, SK(close_first), "client", 0, 0,
     "who closes an unpooled connection first, so holds its TIME_WAIT: client (the aggregator: "
     "its port is held, the port wall) or server (the downstream: a new SYN takes it over)"},
    {"on_failure", K_ENUM, SK(on_failure), "cancel", 0, 0,
     "a par(...) whose call fails: cancel (its other calls end at once, their permits and "
     "connections given back, and the request fails: StructuredTaskScope) or wait (the request "
     "fails when its slowest call is done: join all)"},
};
#define SCN_NKEYS (sizeof scn_keys / sizeof scn_keys[0])
_Static_assert(SCN_NKEYS <= SCN_MAX_KEYS, "struct scenario's key_at[] has a row per key");

#define SVK(field) offsetof(struct service_cfg, field)
static const struct scn_key svc_keys[] = {
    {"latency", K_DIST, SVK(latency), "50ms", 0, 3600e9,
     "time the service takes to answer one call"},
    {"limit", K_INT, SVK(limit), "0", 0, 10000000,
     "calls the service serves at once (0 = unlimited); more wait (see wait)"},
    {"pool", K_INT, SVK(pool), "10000", 0, 1000000,
     "keep-alive connections per model, opened on demand (0 = a new TCP connection per call)"},
    {"connect_time", K_TIME, SVK(connect_time), "100us", 0, 1e10,
     "added to a call that opens a new TCP connection"},
    {"timeout", K_TIME, SVK(timeout), "0", 0, 3600e9,
     "a call slower than this fails the request (0 = never)"},
    {"wait", K_TIME, SVK(wait), "unlimited", 0, 3600e9,
     "longest a call waits for a permit of `limit`; then its request fails with a 503, `shed` "
     "(Semaphore.tryAcquire(wait)); 0 = it never waits, unlimited = as long as it takes"},
    {"fail_share", K_DOUBLE, SVK(fail_share), "0", 0, 1,
     "share of the calls that answer an error (its request fails, 502), each drawn at random"},
    {"fail_after", K_TIME, SVK(fail_after), "0", 0, 3600e9,
     "when a failing call answers its error, instead of after `latency`"},
};
#define SVC_NKEYS (sizeof svc_keys / sizeof svc_keys[0])

/* ---- III.2 Values and programs ---- */
/* Where a value came from, for `file:line: message`. */
struct scn_src {
    const char *file;
    int line;
    char *err; /* message buffer */
    size_t errlen;
};

static int scn_fail(const struct scn_src *src, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int scn_fail(const struct scn_src *src, const char *fmt, ...)
{
    int n = src->line > 0 ? snprintf(src->err, src->errlen, "%s:%d: ", src->file, src->line)
                          : snprintf(src->err, src->errlen, "%s: ", src->file);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < src->errlen)
        vsnprintf(src->err + n, src->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *scn_skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* A number followed by a unit from `units`; *end is left after the unit. */
struct unit {
    const char *name;
    double scale;
};
static const struct unit time_units[] = {{"ns", 1},  {"us", 1e3},   {"ms", 1e6},
                                         {"s", 1e9}, {"min", 60e9}, {0, 0}};
static const struct unit byte_units[] = {
    {"B", 1},    {"KiB", 1024}, {"MiB", 1048576}, {"GiB", 1073741824.0},
    {"KB", 1e3}, {"MB", 1e6},   {"GB", 1e9},      {0, 0}};

/* Numbers are decimal. strtod also reads hexadecimal (0x10, 0x1p4), which a scenario never
 * means: scn_strtod then reads nothing (*end = p). */
static int scn_hex(const char *p)
{
    const char *q = scn_skip_space(p);
    q += *q == '+' || *q == '-';
    return q[0] == '0' && (q[1] == 'x' || q[1] == 'X');
}

static double scn_strtod(const char *p, char **end)
{
    *end = (char *)p;
    return scn_hex(p) ? 0 : strtod(p, end);
}

static int scn_number_unit(const char *p, const char **end, const struct unit *units, double *out)
{
    char *e;
    errno = 0;
    double v = scn_strtod(p, &e);
    if (e == p || errno || !isfinite(v))
        return -1;
    const char *u = e;
    size_t len = 0;
    while (isalpha((unsigned char)u[len]))
        len++;
    if (len == 0) {
        if (v != 0)
            return -1; /* only 0 may omit its unit */
        *out = 0;
        *end = u;
        return 0;
    }
    for (const struct unit *un = units; un->name; un++)
        if (strlen(un->name) == len && strncmp(un->name, u, len) == 0) {
            *out = v * un->scale;
            *end = u + len;
            return 0;
        }
    return -1;
}

/* The inverse, for messages: `v` written with the largest of `units` that divides it exactly
 * (1e3 ns is "1us", 4096 bytes "4KiB"), as a scenario file would write it. */
static const char *scn_unit_text(char *buf, size_t len, double v, const struct unit *units)
{
    const struct unit *best = NULL;
    for (const struct unit *un = units; un && un->name; un++)
        if (v >= un->scale && fmod(v, un->scale) == 0 && (!best || un->scale > best->scale))
            best = un;
    if (best)
        snprintf(buf, len, "%.15g%s", v / best->scale, best->name);
    else
        snprintf(buf, len, "%.15g", v);
    return buf;
}

/* A key's allowed range as a scenario file writes it, "[1ms, 1440min]"; "" for a key whose
 * value is a word, a text or a seed, which have none. Shown by --keys and range errors. */
static const char *scn_range_text(char *buf, size_t len, const struct scn_key *k)
{
    const struct unit *u = k->type == K_TIME || k->type == K_DIST ? time_units
                           : k->type == K_BYTES                   ? byte_units
                                                                  : NULL;
    char lo[24], hi[24];
    if (k->min == 0 && k->max == 0)
        snprintf(buf, len, "%s", "");
    else
        snprintf(buf, len, "[%s, %s]", scn_unit_text(lo, sizeof lo, k->min, u),
                 scn_unit_text(hi, sizeof hi, k->max, u));
    return buf;
}

static int scn_time(const struct scn_src *src, const char *p, const char **end, double *ns)
{
    if (scn_number_unit(scn_skip_space(p), end, time_units, ns) < 0)
        return scn_fail(src, "bad time '%.40s' (want e.g. 250us, 50ms, 1.5s)", scn_skip_space(p));
    if (*ns < 0)
        return scn_fail(src, "negative time '%.40s'", scn_skip_space(p));
    return 0;
}

/* dist := TIME | const(TIME) | uniform(TIME, TIME) | exp(TIME) | lognormal(TIME, TIME) */
static int scn_dist(const struct scn_src *src, const char *p, const char **end, struct dist *d)
{
    static const struct {
        const char *name;
        uint8_t shape, nargs;
    } forms[] = {{"const", DIST_CONST, 1},
                 {"uniform", DIST_UNIFORM, 2},
                 {"exp", DIST_EXP, 1},
                 {"lognormal", DIST_LOGNORMAL, 2}};
    p = scn_skip_space(p);
    if (isdigit((unsigned char)*p) || *p == '.') {
        double v;
        if (scn_time(src, p, end, &v) < 0)
            return -1;
        *d = (struct dist){DIST_CONST, v, 0};
        return 0;
    }
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        size_t n = strlen(forms[f].name);
        if (strncmp(p, forms[f].name, n) != 0 || *scn_skip_space(p + n) != '(')
            continue;
        double arg[2] = {0, 0};
        const char *arg_at = scn_skip_space(p + n) + 1;
        for (int i = 0; i < forms[f].nargs; i++) {
            if (i > 0) {
                arg_at = scn_skip_space(arg_at);
                if (*arg_at != ',')
                    return scn_fail(src, "%s() takes %d times", forms[f].name, forms[f].nargs);
                arg_at++;
            }
            if (scn_time(src, arg_at, &arg_at, &arg[i]) < 0)
                return -1;
        }
        arg_at = scn_skip_space(arg_at);
        if (*arg_at != ')')
            return scn_fail(src, "%s() takes %d time%s, then ')'", forms[f].name, forms[f].nargs,
                            forms[f].nargs > 1 ? "s" : "");
        *end = arg_at + 1;
        d->shape = forms[f].shape;
        if (d->shape == DIST_LOGNORMAL) {
            if (arg[0] <= 0 || arg[1] < arg[0])
                return scn_fail(src, "lognormal(p50, p99) needs 0 < p50 <= p99");
            d->a = log(arg[0]);
            d->b = (log(arg[1]) - log(arg[0])) / Z99;
        } else {
            if (d->shape == DIST_UNIFORM && arg[1] < arg[0])
                return scn_fail(src, "uniform(low, high) needs low <= high");
            d->a = arg[0];
            d->b = arg[1];
        }
        return 0;
    }
    return scn_fail(
        src, "bad distribution '%.40s' (want 5ms, uniform(a,b), exp(mean), lognormal(p50,p99))", p);
}

/* The service called `name` (len bytes), declared now if it is new; -1 after a message. */
static int scn_service(struct scenario *s, const struct scn_src *src, const char *name, int len)
{
    for (int i = 0; i < s->nsvc; i++)
        if ((int)strlen(s->svc[i].name) == len && strncmp(s->svc[i].name, name, (size_t)len) == 0)
            return i;
    if (len >= (int)sizeof s->svc[0].name)
        return scn_fail(src, "service name '%.20s...' is longer than %zu characters", name,
                        sizeof s->svc[0].name - 1);
    if (s->nsvc == MAX_SERVICES)
        return scn_fail(src, "too many services (at most %d): '%.*s'", MAX_SERVICES, len, name);
    memcpy(s->svc[s->nsvc].name, name, (size_t)len);
    s->svc[s->nsvc].name[len] = 0;
    return s->nsvc++;
}

static int scn_ident(const char *p)
{
    int n = 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '-')
        n++;
    return n;
}

/* Recursive descent over the program grammar; appends steps to s->prog. */
static int scn_program_items(struct scenario *s, const struct scn_src *src, const char **pp,
                             int depth);

static int scn_emit(struct scenario *s, const struct scn_src *src, struct step step)
{
    if (s->nsteps == MAX_STEPS)
        return scn_fail(src, "program longer than %d steps", MAX_STEPS);
    s->prog[s->nsteps++] = step;
    return 0;
}

static int scn_program_item(struct scenario *s, const struct scn_src *src, const char **pp,
                            int depth)
{
    const char *p = scn_skip_space(*pp);
    int n = scn_ident(p), first = s->nsteps;
    struct step step = {0};
    if (n == 4 && strncmp(p, "sync", 4) == 0) {
        p = scn_skip_space(p + 4);
        if (*p != '{')
            return scn_fail(src, "sync needs '{'");
        p++;
        if (depth > 8)
            return scn_fail(src, "sync nested too deep");
        if (scn_emit(s, src, (struct step){.op = OP_SYNC_BEGIN}) < 0)
            return -1;
        if (scn_program_items(s, src, &p, depth + 1) < 0)
            return -1;
        p = scn_skip_space(p);
        if (*p != '}')
            return scn_fail(src, "sync block not closed with '}'");
        p++;
        if (scn_emit(s, src, (struct step){.op = OP_SYNC_END}) < 0)
            return -1;
    } else if ((n == 3 && (!strncmp(p, "cpu", 3) || !strncmp(p, "par", 3))) ||
               (n == 2 && !strncmp(p, "io", 2)) || (n == 4 && !strncmp(p, "call", 4))) {
        const char *word = p;
        p = scn_skip_space(p + n);
        if (*p != '(')
            return scn_fail(src, "%.*s needs '('", n, word);
        p++;
        if (*word == 'c' && word[1] == 'p')
            step.op = OP_CPU;
        else if (*word == 'i')
            step.op = OP_IO;
        else
            step.op = *word == 'p' ? OP_PAR : OP_CALL;
        if (step.op == OP_CPU || step.op == OP_IO) {
            if (scn_dist(src, p, &p, &step.d) < 0)
                return -1;
        } else {
            for (;;) {
                p = scn_skip_space(p);
                int len = scn_ident(p);
                if (len == 0)
                    return scn_fail(src, "%.*s() needs a service name", n, word);
                if (step.nsvc == MAX_PAR || (step.op == OP_CALL && step.nsvc == 1))
                    return scn_fail(src, "too many services in %.*s()", n, word);
                int k = scn_service(s, src, p, len);
                if (k < 0)
                    return -1;
                step.svc[step.nsvc++] = (uint8_t)k;
                p = scn_skip_space(p + len);
                if (*p != ',')
                    break;
                p++;
            }
        }
        p = scn_skip_space(p);
        if (*p != ')')
            return scn_fail(src, "expected ')' at '%.20s'", p);
        p++;
        if (scn_emit(s, src, step) < 0)
            return -1;
    } else {
        return scn_fail(src, "unknown program step '%.20s' (want cpu, call, par, io, sync)", p);
    }
    p = scn_skip_space(p);
    if (*p == '*') { /* item*COUNT repeats the steps just emitted */
        char *e;
        long count = strtol(p + 1, &e, 10);
        if (e == p + 1 || count < 1 || count > MAX_STEPS)
            return scn_fail(src, "bad repeat count after '*'");
        int len = s->nsteps - first;
        for (long c = 1; c < count; c++)
            for (int i = 0; i < len; i++)
                if (scn_emit(s, src, s->prog[first + i]) < 0)
                    return -1;
        p = e;
    }
    *pp = p;
    return 0;
}

static int scn_program_items(struct scenario *s, const struct scn_src *src, const char **pp,
                             int depth)
{
    for (;;) {
        const char *p = scn_skip_space(*pp);
        if (*p == 0 || *p == '}') {
            *pp = p;
            return 0;
        }
        if (scn_program_item(s, src, pp, depth) < 0)
            return -1;
    }
}

static void scn_service_defaults(struct service_cfg *c);

/* A new program: the services only the old one called go (the defaults' A, B and C), and
 * those a key named stay, for this program to call (or scn_finish to report). */
static void scn_forget_services(struct scenario *s)
{
    int kept = 0;
    for (int i = 0; i < s->nsvc; i++)
        if (s->svc[i].key_at[0])
            s->svc[kept++] = s->svc[i];
    for (int i = kept; i < MAX_SERVICES; i++) {
        memset(&s->svc[i], 0, sizeof s->svc[i]);
        scn_service_defaults(&s->svc[i]);
    }
    s->nsvc = kept;
}

static int scn_program(struct scenario *s, const struct scn_src *src, const char *text)
{
    s->nsteps = 0;
    scn_forget_services(s);
    const char *p = text;
    if (scn_program_items(s, src, &p, 0) < 0)
        return -1;
    if (*p == '}')
        return scn_fail(src, "'}' without sync {");
    if (s->nsteps == 0)
        return scn_fail(src, "empty program");
    return 0;
}

/* K_ENUM: the word's index into *field, or a message naming the words (and the nearest). */
static const char *scn_nearest(const char *word, const char *const *names);
static int scn_enum(const struct scn_src *src, const struct scn_key *k, const char *v, void *field)
{
    char words[128] = "";
    const char *const *names = NULL;
    for (size_t i = 0; i < sizeof scn_enums / sizeof scn_enums[0]; i++)
        if (scn_enums[i].off == k->off)
            names = scn_enums[i].names;
    for (int i = 0; names[i]; i++) {
        if (!strcmp(v, names[i])) {
            *(int *)field = i;
            return 0;
        }
        snprintf(words + strlen(words), sizeof words - strlen(words), "%s%s", i ? ", " : "",
                 names[i]);
    }
    const char *near = scn_nearest(v, names);
    if (near)
        return scn_fail(src, "%s: '%s' is not one of %s (did you mean '%s'?)", k->name, v, words,
                        near);
    return scn_fail(src, "%s: '%s' is not one of %s", k->name, v, words);
}

/* K_STR and K_PROGRAM: the text itself, within its field's size (a program is then parsed). */
static int scn_text(struct scenario *s, void *field, const struct scn_key *k, const char *v,
                    const struct scn_src *src)
{
    if (k->type == K_PROGRAM) {
        if (strlen(v) >= sizeof s->program_text)
            return scn_fail(src, "program longer than %zu characters", sizeof s->program_text - 1);
        strcpy(s->program_text, v);
        return scn_program(s, src, v);
    }
    size_t cap = k->off == SK(program_text) ? sizeof s->program_text : sizeof s->name;
    if (strlen(v) >= cap)
        return scn_fail(src, "%s: value longer than %zu characters", k->name, cap - 1);
    strcpy(field, v);
    return 0;
}

/* A numeric key's text into *x (K_U64 straight into its field), *end after the number.
 * 0; 1 when the value is stored already (K_TIME's "unlimited"); -1 after a message. */
static int scn_number(const struct scn_key *k, const char *v, void *field, const char **end,
                      double *x, const struct scn_src *src)
{
    char *e;
    switch (k->type) {
    case K_TIME:
        if (!strcmp(k->def, "unlimited") && !strncmp(scn_skip_space(v), "unlimited", 9)) {
            *end = scn_skip_space(v) + 9; /* a key whose default is no bound takes the word */
            if (*scn_skip_space(*end))
                return 0; /* refused by the caller */
            *(simtime *)field = SVC_WAIT_UNLIMITED;
            return 1;
        }
        return scn_time(src, v, end, x);
    case K_BYTES:
        if (scn_number_unit(v, end, byte_units, x) < 0)
            return scn_fail(src, "%s: bad size '%s' (want e.g. 64KiB, 1MiB)", k->name, v);
        return 0;
    case K_U64:
        errno = 0;
        if (*v == '-' || scn_hex(v))
            return scn_fail(src, "%s: '%s' is not a whole number >= 0", k->name, v);
        *(uint64_t *)field = strtoull(v, &e, 10);
        if (e == v || errno)
            return scn_fail(src, "%s: '%s' is not a whole number >= 0", k->name, v);
        *end = e;
        return 0;
    default: /* K_INT, K_LONG, K_DOUBLE, K_BOOL */
        errno = 0;
        *x = scn_strtod(v, &e);
        if (e == v || errno || !isfinite(*x))
            return scn_fail(src, "%s: '%s' is not a%s number", k->name, v,
                            scn_hex(v) ? " decimal" : "");
        if (k->type != K_DOUBLE && *x != floor(*x))
            return scn_fail(src, "%s: '%s' is not a whole number", k->name, v);
        *end = e;
        return 0;
    }
}

/* x, checked, into a numeric key's field in the field's type. */
static void scn_store(const struct scn_key *k, void *field, double x)
{
    switch (k->type) {
    case K_INT:
    case K_BOOL:
        *(int *)field = (int)x;
        break;
    case K_LONG:
    case K_BYTES:
        *(long *)field = (long)x;
        break;
    case K_DOUBLE:
        *(double *)field = x;
        break;
    case K_TIME:
        *(simtime *)field = (simtime)(x + 0.5);
        break;
    default:
        break;
    }
}

/* Parse one value of a key into `base + key->off`. A distribution's range is checked on its
 * p99 (lognormal), its end (uniform) or its mean. */
static int scn_value(struct scenario *s, void *base, const struct scn_key *k, const char *v,
                     const struct scn_src *src)
{
    void *field = (char *)base + k->off;
    const char *end = v;
    double x = 0;
    int rc;
    if (k->type == K_STR || k->type == K_PROGRAM)
        return scn_text(s, field, k, v, src);
    if (k->type == K_ENUM)
        return scn_enum(src, k, v, field);
    if (k->type == K_DIST)
        rc = scn_dist(src, v, &end, field);
    else
        rc = scn_number(k, v, field, &end, &x, src);
    if (rc)
        return rc < 0 ? -1 : 0;
    if (*scn_skip_space(end))
        return scn_fail(src, "%s: unexpected '%s' after the value", k->name, scn_skip_space(end));
    if (k->type == K_DIST) {
        const struct dist *d = field;
        x = d->shape == DIST_LOGNORMAL ? exp(d->a + Z99 * d->b)
            : d->shape == DIST_UNIFORM ? d->b
                                       : d->a;
    }
    if (k->type != K_U64 && (x < k->min || x > k->max)) {
        char range[64];
        return scn_fail(src, "%s: %s is out of range %s", k->name, v,
                        scn_range_text(range, sizeof range, k));
    }
    scn_store(k, field, x);
    return 0;
}

/* ---- III.3 Loading and checks ---- */

/* Edit distance (Levenshtein) between two names, for "did you mean"; a name of 64
 * characters or more counts as far from everything. */
static int scn_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    int row[64];
    if (n >= 64 || m >= 64)
        return INT_MAX / 2;
    for (size_t j = 0; j <= m; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0]; /* row[j - 1] of the previous row */
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[m];
}

/* The name nearest to a word someone typed, among the names offered (scn_near_offer). */
struct scn_near {
    const char *word; /* as typed */
    const char *best; /* NULL until a name is near enough to be a slip of the keyboard */
    int dist;
};

/* Keep `name` if it is nearer than the best so far and near enough: at most a third of the
 * word's letters wrong (one for a short word). A dotted name also counts by its last part,
 * so `max_threads` finds `platform.max_threads`, and a word of 3 or more letters that
 * begins a name is one letter off it (`--head` for `--headless`). */
static void scn_near_offer(struct scn_near *n, const char *name)
{
    const char *dot = strrchr(name, '.');
    size_t len = strlen(n->word);
    int d = scn_distance(n->word, name), most = (int)len / 3;
    if (dot && !strchr(n->word, '.') && scn_distance(n->word, dot + 1) < d)
        d = scn_distance(n->word, dot + 1);
    if (len >= 3 && strncmp(name, n->word, len) == 0 && d > 1)
        d = 1;
    if (d <= (most > 1 ? most : 1) && (!n->best || d < n->dist)) {
        n->best = name;
        n->dist = d;
    }
}

/* The nearest of a NULL-terminated list of names, or NULL when none is near. */
static const char *scn_nearest(const char *word, const char *const *names)
{
    struct scn_near near = {word, NULL, 0};
    for (int i = 0; names[i]; i++)
        scn_near_offer(&near, names[i]);
    return near.best;
}

/* Where a value comes from, as messages begin: "file:line" or "--set ...". */
static void scn_src_name(const struct scn_src *src, char *out, size_t len)
{
    if (src->line > 0)
        snprintf(out, len, "%s:%d", src->file, src->line);
    else
        snprintf(out, len, "%s", src->file);
}

/* Set `key` to `value`: the one entry point for files, defaults and --set. */
static int scn_set(struct scenario *s, const char *key, const char *value,
                   const struct scn_src *src)
{
    if (strncmp(key, "service.", 8) == 0) {
        const char *name = key + 8, *dot = strrchr(name, '.');
        if (!dot || dot == name)
            return scn_fail(src, "'%s': want service.NAME.KEY", key);
        int len = scn_ident(name);
        if (name + len != dot)
            return scn_fail(src, "'%s': bad service name", key);
        int i = scn_service(s, src, name, len);
        if (i < 0)
            return -1;
        if (!s->svc[i].key_at[0])
            scn_src_name(src, s->svc[i].key_at, sizeof s->svc[i].key_at);
        struct scn_near near = {dot + 1, NULL, 0};
        for (size_t k = 0; k < SVC_NKEYS; k++) {
            if (strcmp(dot + 1, svc_keys[k].name) == 0) {
                if (svc_keys[k].off == SVK(wait))
                    scn_src_name(src, s->svc[i].wait_at, sizeof s->svc[i].wait_at);
                return scn_value(s, &s->svc[i], &svc_keys[k], value, src);
            }
            scn_near_offer(&near, svc_keys[k].name);
        }
        if (near.best)
            return scn_fail(src, "unknown service key '%s' (did you mean '%s'?)", dot + 1,
                            near.best);
        return scn_fail(
            src,
            "unknown service key '%s' (service keys: latency, limit, pool, connect_time, timeout, "
            "wait)",
            dot + 1);
    }
    struct scn_near near = {key, NULL, 0};
    for (size_t k = 0; k < SCN_NKEYS; k++) {
        if (strcmp(key, scn_keys[k].name) == 0) {
            s->warmup_auto &= strcmp(key, "warmup") != 0;
            scn_src_name(src, s->key_at[k], sizeof s->key_at[k]);
            s->key_seq[k] = ++s->nset;
            return scn_value(s, s, &scn_keys[k], value, src);
        }
        scn_near_offer(&near, scn_keys[k].name);
    }
    if (near.best)
        return scn_fail(src, "unknown key '%s' (did you mean '%s'?)", key, near.best);
    return scn_fail(src, "unknown key '%s' (./sim --keys lists them)", key);
}

static void scn_service_defaults(struct service_cfg *c)
{
    char err[64];
    struct scn_src src = {"<defaults>", 0, err, sizeof err};
    for (size_t k = 0; k < SVC_NKEYS; k++)
        scn_value(NULL, c, &svc_keys[k], svc_keys[k].def, &src);
}

static void scn_defaults(struct scenario *s)
{
    char err[256];
    struct scn_src src = {"<defaults>", 0, err, sizeof err};
    memset(s, 0, sizeof *s);
    for (size_t k = 0; k < SCN_NKEYS; k++)
        if (scn_value(s, s, &scn_keys[k], scn_keys[k].def, &src) < 0) {
            fprintf(stderr, "sim: bug: %s\n", err);
            abort();
        }
    for (int i = 0; i < MAX_SERVICES; i++)
        scn_service_defaults(&s->svc[i]);
    s->warmup_auto = 1;
}

/* Split "key = value" (or "key=value"), trimming blanks. Returns 0, or -1 if no '='. */
static int scn_split(char *line, char **key, char **value)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return -1;
    *eq = 0;
    char *k = (char *)scn_skip_space(line), *v = (char *)scn_skip_space(eq + 1);
    for (char *t = eq - 1; t >= k && isspace((unsigned char)*t); t--)
        *t = 0;
    for (char *t = v + strlen(v) - 1; t >= v && isspace((unsigned char)*t); t--)
        *t = 0;
    *key = k;
    *value = v;
    return 0;
}

/* Scenario and calibration files are a few hundred bytes of text. The bounds turn
 * /dev/zero, a binary or a runaway file into an error with its line, instead of a hang or a
 * parse of garbage (the results CSV of --validate has its own, larger, in IV.3). */
#define SCN_MAX_LINE 1024      /* bytes in one line, its newline included */
#define SCN_MAX_FILE (1 << 20) /* bytes in one scenario or calibration file */

/* A text file read one bounded line at a time; `src` counts the lines for messages. */
struct scn_text {
    FILE *f;
    struct scn_src src;
    size_t total, max; /* bytes read so far, and at most */
};

/* The next line into `line` (cap bytes, NUL-terminated, without its newline). Returns 1
 * for a line, 0 at the end, -1 after a message: a NUL byte (the line would be cut short
 * there, silently), a line or a file beyond its bound, a read error. */
static int scn_getline(struct scn_text *t, char *line, size_t cap)
{
    size_t n = 0;
    int c;
    t->src.line++;
    while ((c = getc(t->f)) != EOF && c != '\n') {
        if (c == 0)
            return scn_fail(&t->src, "NUL byte in the line (not a text file?)");
        if (n == cap - 2)
            return scn_fail(&t->src, "line longer than %zu characters", cap - 2);
        if (++t->total > t->max)
            return scn_fail(&t->src, "file longer than %zu bytes", t->max);
        line[n++] = (char)c;
    }
    line[n] = 0;
    if (ferror(t->f))
        return scn_fail(&t->src, "cannot read: %s", strerror(errno));
    /* a UTF-8 byte order mark, as some editors write, is not part of the first key */
    if (t->src.line == 1 && !strncmp(line, "\xEF\xBB\xBF", 3))
        memmove(line, line + 3, n - 2);
    t->total++; /* the newline */
    return c != EOF || n > 0;
}

/* Read scenario text from `f` (named `name` in messages) over the defaults already in *s.
 * With `seen`, the keys it sets are appended there, comma-separated (calibration files). */
static int scn_read(struct scenario *s, FILE *f, const char *name, char *seen, size_t seenlen,
                    char *err, size_t errlen)
{
    struct scn_text text = {f, {name, 0, err, errlen}, 0, SCN_MAX_FILE};
    char line[SCN_MAX_LINE];
    int got;
    while ((got = scn_getline(&text, line, sizeof line)) > 0) {
        char *hash = strchr(line, '#'), *key, *value;
        if (hash)
            *hash = 0;
        if (*scn_skip_space(line) == 0)
            continue;
        if (scn_split(line, &key, &value) < 0)
            return scn_fail(&text.src, "expected 'key = value'");
        if (scn_set(s, key, value, &text.src) < 0)
            return -1;
        if (seen && !strstr(seen, key)) {
            size_t used = strlen(seen);
            snprintf(seen + used, seenlen - used, "%s%s", used ? ", " : "", key);
        }
    }
    return got;
}

static int scn_load_keys(struct scenario *s, const char *path, char *seen, size_t seenlen,
                         char *err, size_t errlen)
{
    FILE *f = io_open_in(path, err, errlen);
    if (!f)
        return -1;
    int rc = scn_read(s, f, path, seen, seenlen, err, errlen);
    fclose(f);
    return rc;
}

static int scn_load(struct scenario *s, const char *path, char *err, size_t errlen)
{
    return scn_load_keys(s, path, NULL, 0, err, errlen);
}

/* A service a key names must be one the program calls: a key for another is a typo
 * (`service.invntory.pool`) that would configure nothing, silently. Named by the key. */
static int scn_check_called(const struct scenario *s, char *err, size_t errlen)
{
    int called[MAX_SERVICES] = {0};
    char names[MAX_SERVICES * 26] = "";
    for (int i = 0; i < s->nsteps; i++)
        for (int k = 0; k < s->prog[i].nsvc; k++)
            called[s->prog[i].svc[k]] = 1;
    for (int i = 0; i < s->nsvc; i++)
        if (called[i])
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     names[0] ? ", " : "", s->svc[i].name);
    for (int i = 0; i < s->nsvc; i++)
        if (!called[i] && s->svc[i].key_at[0]) {
            struct scn_src src = {s->svc[i].key_at, 0, err, errlen};
            return scn_fail(&src, "service '%s' is not called by the program (services: %s)",
                            s->svc[i].name, names[0] ? names : "none");
        }
    return 0;
}

/* A bounded wait for a permit needs the permits: `wait` without `limit` would shed nothing. */
static int scn_check_wait(const struct scenario *s, char *err, size_t errlen)
{
    for (int i = 0; i < s->nsvc; i++)
        if (s->svc[i].wait != SVC_WAIT_UNLIMITED && s->svc[i].limit == 0) {
            struct scn_src src = {s->svc[i].wait_at[0] ? s->svc[i].wait_at : "<scenario>", 0, err,
                                  errlen};
            return scn_fail(&src,
                            "service.%s.wait needs service.%s.limit: a wait for a permit of no "
                            "limit sheds nothing",
                            s->svc[i].name, s->svc[i].name);
        }
    return 0;
}

/* The row of scn_keys[] named `name` (a key the code names, so it exists). */
static size_t scn_key_index(const char *name)
{
    size_t k = 0;
    while (k < SCN_NKEYS - 1 && strcmp(scn_keys[k].name, name))
        k++;
    return k;
}

/* Keys a and b (b may be NULL) contradict each other: the message goes where the later of
 * them was set, the one that made the contradiction (a calibration file's own line, not the
 * scenario that loaded it), and names where the other one came from; `where` when neither
 * was set. Returns -1. */
static int scn_clash(const struct scenario *s, const char *a, const char *b, const char *where,
                     char *err, size_t errlen, const char *what)
{
    size_t ka = scn_key_index(a), kb = b ? scn_key_index(b) : ka;
    size_t blamed = s->key_seq[kb] > s->key_seq[ka] ? kb : ka, other = blamed == ka ? kb : ka;
    struct scn_src src = {s->key_at[blamed][0] ? s->key_at[blamed] : where, 0, err, errlen};
    if (other == blamed)
        return scn_fail(&src, "%s", what);
    if (!s->key_at[other][0])
        return scn_fail(&src, "%s (%s at its default)", what, scn_keys[other].name);
    return scn_fail(&src, "%s (%s set at %s)", what, scn_keys[other].name, s->key_at[other]);
}

/* auth: the token check becomes the program's first step, cpu(auth_cpu), so that both
 * models charge it on the request's own thread as it starts, before the steps the program
 * names (a servlet filter before the controller), unscaled by the cache pressure (the check
 * reads only the token and the key). Once per scenario, after its last key is set. */
static int scn_auth_step(struct scenario *s, const char *where, char *err, size_t errlen)
{
    simtime cost = s->auth_cpu[s->auth];
    if (s->auth == AUTH_OFF || cost == 0)
        return 0; /* no step, no draw: the requests' random streams as without */
    char what[96];
    snprintf(what, sizeof what, "program: no room for the token check's step (at most %d)",
             MAX_STEPS);
    if (s->nsteps == MAX_STEPS)
        return scn_clash(s, "auth", "program", where, err, errlen, what);
    memmove(s->prog + 1, s->prog, (size_t)s->nsteps * sizeof s->prog[0]);
    s->prog[0] = (struct step){.op = OP_CPU, .d = {DIST_CONST, (double)cost, 0}};
    s->nsteps++;
    return 0;
}

/* Cross-key checks and derived values, after every file and --set has been applied. */
static int scn_finish(struct scenario *s, const char *where, char *err, size_t errlen)
{
    const char *clash = NULL, *a = NULL, *b = NULL; /* what is wrong, between keys a and b */
    if (s->warmup >= s->duration)
        clash = "warmup must be shorter than duration", a = "warmup", b = "duration";
    else if (s->users == 0 && s->rate <= 0)
        clash = "no load: set users > 0 (closed loop) or rate > 0 (open loop)", a = "users",
        b = "rate";
    else if (s->users > 0 && s->rate > 0)
        clash = "set users (closed loop) or rate (open loop), not both", a = "users", b = "rate";
    else if (s->min_spare > s->max_threads)
        clash = "platform.min_spare exceeds platform.max_threads", a = "platform.min_spare",
        b = "platform.max_threads";
    else if (s->port_low > s->port_high)
        clash = "net.port_low exceeds net.port_high", a = "net.port_low", b = "net.port_high";
    else if (s->rate * (double)s->duration / SEC > 2e9)
        clash = "rate x duration exceeds 2e9 requests", a = "rate", b = "duration";
    if (clash)
        return scn_clash(s, a, b, where, err, errlen, clash);
    if (s->parallelism == 0)
        s->parallelism = s->cores;
    if (s->max_pool_size < s->parallelism)
        return scn_clash(s, "virtual.max_pool_size",
                         s->key_seq[scn_key_index("virtual.parallelism")] ? "virtual.parallelism"
                                                                          : "cores",
                         where, err, errlen, "virtual.max_pool_size is below virtual.parallelism");
    int depth = 0;
    for (int i = 0; i < s->nsteps; i++)
        depth += s->prog[i].op == OP_SYNC_BEGIN ? 1 : s->prog[i].op == OP_SYNC_END ? -1 : 0;
    if (depth)
        return scn_clash(s, "program", NULL, where, err, errlen, "program: unbalanced sync { }");
    if (scn_check_called(s, err, errlen) < 0 || scn_check_wait(s, err, errlen) < 0)
        return -1;
    return scn_auth_step(s, where, err, errlen);
}

/* Print every key with its default, range and meaning: the one place keys are documented. */
static void scn_print_keys(FILE *out)
{
    char range[64];
    fprintf(out,
            "Scenario keys (`key = value` in a .scn file, or --set key=value):\n\n"
            "  %-26s %-12s %-18s %s\n",
            "KEY", "DEFAULT", "RANGE", "MEANING");
    for (size_t k = 0; k < SCN_NKEYS; k++)
        fprintf(out, "  %-26s %-12s %-18s %s\n", scn_keys[k].name, scn_keys[k].def,
                scn_range_text(range, sizeof range, &scn_keys[k]), scn_keys[k].doc);
    fprintf(out, "\nPer downstream service NAME (declared by using it):\n\n");
    for (size_t k = 0; k < SVC_NKEYS; k++)
        fprintf(out, "  service.NAME.%-13s %-12s %-18s %s\n", svc_keys[k].name, svc_keys[k].def,
                scn_range_text(range, sizeof range, &svc_keys[k]), svc_keys[k].doc);
    fprintf(
        out,
        "\nValues: times 250ns 20us 50ms 1.5s; sizes 64KiB 1MiB; distributions 5ms, uniform(a,b),\n"
        "exp(mean), lognormal(p50,p99). Program: cpu(DIST) call(NAME) par(A,B,..) io(DIST)\n"
        "sync { ... } and item*COUNT, e.g. `program = cpu(100us) call(A)*3`.\n");
}

/* ==== Part IV. Reports and instruments ==== */

/* Tested by tests/test_sim.c (test_t_quantile, test_interval_coverage, test_steady_state,
 * test_bounds, test_report_conservation, test_sweep_values, test_validate*, test_timeline,
 * test_live*), tests/test_verdict.c (the verdict's error rates) and make fuzz (fuzz_readers,
 * fuzz_live, fuzz_sweep). */

/* ---- IV.1 Reports ---- */

/* Upper bounds on a model's throughput, each from one resource (rep_bounds). A report puts
 * the achieved throughput beside the least of them, the one that binds. */
enum bound_id { BOUND_LITTLE, BOUND_CPU, BOUND_POOL, BOUND_PORTS, BOUND_N };
static const char *const bound_keys[BOUND_N] = {"littles_law", "cpu", "pool", "ports"};
static const char *const bound_labels[BOUND_N] = {
    "Little's law N / (R0 + Z)", "CPU: cores or carriers / CPU", "pool: holders / time held",
    "ports: range / TIME_WAIT"};

struct bounds {
    double rps[BOUND_N];     /* req/s; NAN where the bound does not apply */
    char what[BOUND_N][128]; /* how it is made, or why it does not apply */
    int binding;             /* the least that applies; -1 if none does */
    double pool_queues;      /* the pool bound without the limits that shed (service.wait):
                                above it a queue grows without end; INFINITY if none */
    double noise;            /* req/s the window's throughput strays above the binding bound by
                                chance alone: an open loop's Poisson arrivals (REP_NOISE_Z sd);
                                0 where the bound holds for every window */
};

/* What the steady-state verdict keeps of one run (rep_steady, rep_verdict). */
struct steady_run {
    /* the window's bins: completions, their latencies' sum (ns), their length (s) */
    double done[STEADY_BINS], lat[STEADY_BINS], secs[STEADY_BINS];
    int n;             /* bins */
    double tail;       /* s: the response-time tail, max(p99, in flight / throughput) */
    int tail_little;   /* 1: the tail is Little's law's, not the p99 */
    double rho, relax; /* open loop: rate / least bound, relaxation time in s; else 0 */
    double cs2;        /* the squared coefficient of variation of a request's time on it */
    double service;    /* s: 1 / that bound, a request's time on it */
    int bound;         /* that bound (bound_id), -1 closed loop */
    double ndone;      /* requests completed in the window */
    double skew;       /* the skewness of a request's time alone, from the program */
    double cs2_all;    /* its squared coefficient of variation */
    double mass99;     /* s: the program's longest time below which 99% of its mean lies */
    double little;     /* s: in flight at the end / throughput (Little's law); 0 if none */
    int swings;        /* 1: throughput swings (rep_swings), why in swings_why */
    char swings_why[200];
};

/* What a report says of one model. Latencies in ms, memory in bytes. */
struct result {
    double throughput_rps, mean, p50, p90, p99, p999, max, cpu_util;
    double arrived, completed, failed, in_flight;
    double peak_os_threads, peak_blocked, peak_carriers_busy, peak_vt_parked, peak_vt_pinned;
    double peak_queued, peak_ports_tw, peak_thread_mem, peak_thread_reserved, peak_rss;
    double ctx_switches, thread_creations, parks, conns_opened, events;
    double failed_by_reason[FAIL_N];
    /* the fan-out's policy at work (on_failure, fail_share): the window's failed requests'
     * latency (ms), downstream calls begun and connection time (ms) per request ended */
    double failed_p50, failed_p99, calls_per_req, call_ms_per_req;
    int scope;            /* 1: the scenario sets those keys, and reports show these rows */
    double window_s;      /* the statistics window, duration - warmup */
    struct bounds bounds; /* on throughput_rps */
    struct steady_run sr; /* this run's evidence for the verdict */
    int steady;           /* 1: the window looks like a steady state (rep_verdict) */
    char steady_why[320]; /* why, or why not, in one sentence */
};

static void rep_bounds(const struct model *m, struct bounds *b);
static void rep_steady(const struct model *m, struct result *r);

/* Does the scenario set the fan-out's failure keys (on_failure, a service's fail_share)? */
static int rep_scope_used(const struct scenario *s)
{
    int used = s->key_at[scn_key_index("on_failure")][0] != 0;
    for (int i = 0; i < s->nsvc; i++)
        used |= s->svc[i].fail_share > 0;
    return used;
}

/* The fan-out's figures of one run's window (struct scope_stats). */
static void rep_scope(const struct model *m, struct result *r)
{
    const struct scope_stats *sc = &m->stats.scope;
    double ended = (double)m->stats.completed_window + (double)sc->failed;
    r->scope = rep_scope_used(m->s);
    r->failed_p50 = sc->failed_lat ? (double)hist_quantile(sc->failed_lat, 0.50) / 1e6 : 0;
    r->failed_p99 = sc->failed_lat ? (double)hist_quantile(sc->failed_lat, 0.99) / 1e6 : 0;
    r->calls_per_req = ended > 0 ? (double)sc->calls / ended : 0;
    r->call_ms_per_req = ended > 0 ? sc->held_ns / 1e6 / ended : 0;
}
static void rep_verdict(struct result *out, const struct result *xs, int n);

/* The latency rows (ms) of `done` requests whose latencies (ns) sum to lat_sum, in h. */
static void rep_latency(struct result *r, const struct hist *h, double lat_sum, double done)
{
    r->mean = done > 0 ? lat_sum / done / 1e6 : 0;
    r->p50 = (double)hist_quantile(h, 0.50) / 1e6;
    r->p90 = (double)hist_quantile(h, 0.90) / 1e6;
    r->p99 = (double)hist_quantile(h, 0.99) / 1e6;
    r->p999 = (double)hist_quantile(h, 0.999) / 1e6;
}

static void rep_result(const struct model *m, struct result *r)
{
    const struct stats *stats = &m->stats;
    const struct scenario *s = m->s;
    memset(r, 0, sizeof *r);
    r->throughput_rps = (double)stats->completed_window / ((double)(s->duration - s->warmup) / SEC);
    rep_latency(r, stats->lat, stats->lat_sum, (double)stats->completed_window);
    r->max = (double)stats->lat->max / 1e6;
    /* the same window as the throughput, so that U = X·D / cores holds between them */
    r->cpu_util = (double)(cpu_busy_now(m) - stats->busy_at_warmup) /
                  ((double)s->cores * (double)(s->duration - s->warmup));
    r->arrived = (double)stats->arrived;
    r->completed = (double)stats->completed;
    for (int k = 0; k < FAIL_N; k++)
        r->failed += (double)stats->failed[k], r->failed_by_reason[k] = (double)stats->failed[k];
    r->in_flight = m->in_flight;
    rep_scope(m, r);
    r->peak_os_threads = stats->peak_os_threads;
    r->peak_blocked = stats->peak_blocked;
    r->peak_carriers_busy = stats->peak_carriers_busy;
    r->peak_vt_parked = stats->peak_vt_parked;
    r->peak_vt_pinned = stats->peak_vt_pinned;
    r->peak_queued = stats->peak_queued;
    r->peak_ports_tw = stats->peak_ports_tw;
    r->peak_thread_mem = (double)stats->peak_thread_mem;
    r->peak_thread_reserved = (double)stats->peak_thread_reserved;
    r->peak_rss = (double)stats->peak_rss;
    r->ctx_switches = (double)stats->ctx_switches;
    r->thread_creations = (double)stats->thread_creations;
    r->parks = (double)stats->parks;
    r->events = (double)stats->events;
    for (int i = 0; i < s->nsvc; i++)
        r->conns_opened += (double)m->svc[i].opened;
    r->window_s = (double)(s->duration - s->warmup) / SEC;
    rep_bounds(m, &r->bounds);
    rep_steady(m, r);
    rep_verdict(r, r, 1);
}

/* One row per figure: the text table, JSON and CSV are all generated from this table. */
enum rep_fmt { R_INT, R_RATE, R_MS, R_MIB, R_PCT };
/* A percentile is read off the latency histogram, so it is known to a bucket, not to the
 * nanosecond: its interval is never narrower than that bucket (rep_ci_rows). */
enum rep_ci { CI_NONE, CI_MEAN, CI_PERCENTILE };
struct rep_row {
    const char *label; /* text report */
    const char *key;   /* JSON / CSV name; a '.' puts it in a sub-object (latency_ms.p50) */
    size_t off;
    uint8_t fmt;
    uint8_t ci;    /* a headline figure: it gets a 95% confidence interval (enum rep_ci) */
    uint8_t sum;   /* a count of requests: summed over replications, not averaged, so that
                    arrived = completed + failed + in flight holds in whole numbers */
    uint8_t scope; /* shown only where the scenario sets the fan-out's keys (result.scope) */
};
#define RR(field) offsetof(struct result, field)
static const struct rep_row rep_rows[] = {
    {"throughput (req/s)", "throughput_rps", RR(throughput_rps), R_RATE, CI_MEAN, 0, 0},
    {"latency mean (ms)", "latency_ms.mean", RR(mean), R_MS, CI_MEAN, 0, 0},
    {"latency p50 (ms)", "latency_ms.p50", RR(p50), R_MS, CI_PERCENTILE, 0, 0},
    {"latency p90 (ms)", "latency_ms.p90", RR(p90), R_MS, CI_PERCENTILE, 0, 0},
    {"latency p99 (ms)", "latency_ms.p99", RR(p99), R_MS, CI_PERCENTILE, 0, 0},
    {"latency p99.9 (ms)", "latency_ms.p999", RR(p999), R_MS, CI_PERCENTILE, 0, 0},
    {"latency max (ms)", "latency_ms.max", RR(max), R_MS, 0, 0, 0},
    {"requests arrived", "arrived", RR(arrived), R_INT, 0, 1, 0},
    {"requests completed", "completed", RR(completed), R_INT, 0, 1, 0},
    {"requests failed", "failed", RR(failed), R_INT, 0, 1, 0},
    {"requests in flight at end", "in_flight", RR(in_flight), R_INT, 0, 1, 0},
    {"peak OS threads", "peak_os_threads", RR(peak_os_threads), R_INT, 0, 0, 0},
    {"peak OS threads blocked", "peak_threads_blocked", RR(peak_blocked), R_INT, 0, 0, 0},
    {"peak carriers busy", "peak_carriers_busy", RR(peak_carriers_busy), R_INT, 0, 0, 0},
    {"peak virtual threads parked", "peak_vthreads_parked", RR(peak_vt_parked), R_INT, 0, 0, 0},
    {"peak virtual threads pinned", "peak_vthreads_pinned", RR(peak_vt_pinned), R_INT, 0, 0, 0},
    {"peak requests queued", "peak_queued", RR(peak_queued), R_INT, 0, 0, 0},
    {"peak ports in TIME_WAIT", "peak_ports_time_wait", RR(peak_ports_tw), R_INT, 0, 0, 0},
    {"peak thread memory (MiB)", "peak_thread_memory_bytes", RR(peak_thread_mem), R_MIB, 0, 0, 0},
    {"peak stack reserved (MiB)", "peak_thread_reserved_bytes", RR(peak_thread_reserved), R_MIB, 0,
     0, 0},
    {"peak RSS, predicted (MiB)", "predicted_rss_bytes", RR(peak_rss), R_MIB, 0, 0, 0},
    {"CPU utilisation (%)", "cpu_utilisation", RR(cpu_util), R_PCT, CI_MEAN, 0, 0},
    {"context switches", "ctx_switches", RR(ctx_switches), R_INT, 0, 0, 0},
    {"OS threads created", "thread_creations", RR(thread_creations), R_INT, 0, 0, 0},
    {"virtual thread parks", "parks", RR(parks), R_INT, 0, 0, 0},
    {"TCP connections opened", "connections_opened", RR(conns_opened), R_INT, 0, 0, 0},
    {"events simulated", "events", RR(events), R_INT, 0, 0, 0},
    {"failed latency p50 (ms)", "failed_p50_ms", RR(failed_p50), R_MS, 0, 0, 1},
    {"failed latency p99 (ms)", "failed_p99_ms", RR(failed_p99), R_MS, 0, 0, 1},
    {"downstream calls per request", "calls_per_req", RR(calls_per_req), R_RATE, 0, 0, 1},
    {"connection held per request (ms)", "call_ms_per_req", RR(call_ms_per_req), R_MS, 0, 0, 1},
};
#define REP_NROWS (sizeof rep_rows / sizeof rep_rows[0])

/* Is the row shown, in a report whose scenario sets the fan-out's keys or not? */
static int rep_shown(const struct rep_row *row, int scope)
{
    return !row->scope || scope;
}

static double rep_get(const struct result *r, const struct rep_row *row)
{
    return *(const double *)((const char *)r + row->off);
}

/* How JSON and CSV print a row's figure: whole numbers whole (a count rounded to 6 digits
 * would no longer add up), the rest to 6 significant digits. */
static const char *rep_row_fmt(const struct rep_row *row)
{
    return row->fmt == R_INT || row->fmt == R_MIB ? "%.0f" : "%.6g";
}

/* CONFIDENCE INTERVALS
 *   A run is one sample of a random process; its figures are estimates. A report gives each
 *   headline figure (rep_row.ci) a 95% interval, mean +- t(0.975, n-1) * sd / sqrt(n), from
 *   n independent samples of it:
 *     replications  n runs, replication i with seed rep_seed(seed, i) (replication 0 uses the
 *                   seed itself, so one replication is the run of old); the figure is the
 *                   mean of the n runs' figures.
 *     batch means   one run's window cut into n equal batches (--batches n); the figure is
 *                   the whole run's, the interval the batches' spread. Batches of a long run
 *                   are nearly independent; short ones are correlated and the interval is
 *                   too narrow: keep a batch many response times long.
 *   A percentile is known only to its histogram bucket (< 0.8% wide): its half-width is at
 *   least the bucket's width, however closely the samples agree. Near a bound the mean
 *   latency's from batch means is at least what heavy-traffic theory gives the window
 *   (rep_ci_floor): a queue's mean is skewed, and a run that reads low agrees with itself.
 *   The request counts (rep_row.sum) are sums over the replications: whole numbers, for
 *   which arrived = completed + failed + in flight holds in every format; the other rows
 *   are means over the replications (or the one run's). */
struct report {
    struct result r[MODEL_N];  /* the figures */
    struct result ci[MODEL_N]; /* half-widths of the 95% intervals; NAN where there is none */
    int n;                     /* the samples behind the intervals (1: none) */
    int batches;               /* 1: they are batch means of one run, 0: replications */
};

/* The seed of replication i. */
static uint64_t rep_seed(uint64_t seed, int i)
{
    return i == 0 ? seed : rng_key(seed, 0x7265706c69636174ull, (uint64_t)i);
}

/* The width (ms) of the latency histogram's bucket that holds v ms: a percentile's resolution.
 * Samples that agree on a percentile agree on its bucket, not on its value. */
static double rep_bucket_ms(double v)
{
    int i = hist_index((uint64_t)(v * 1e6));
    return (double)(i ? hist_bucket_top(i) - hist_bucket_top(i - 1) : 1) / 1e6;
}

/* Does sample x count for this row? A latency is a completed request's: a sample (a batch,
 * a replication's window) that completed none has no latency, not a latency of 0. */
static int rep_sample_has(const struct result *x, const struct rep_row *row)
{
    return row->fmt != R_MS || x->throughput_rps > 0;
}

/* The half-widths of the headline rows from n samples xs, each row from the samples that
 * have it (NAN elsewhere or when fewer than 2 have it). */
static void rep_ci_rows(const struct result *xs, int n, struct result *half)
{
    for (size_t i = 0; i < REP_NROWS; i++) {
        const struct rep_row *row = &rep_rows[i];
        double sum = 0, ss = 0, *out = (double *)((char *)half + row->off);
        int m = 0;
        for (int k = 0; k < n; k++)
            if (rep_sample_has(&xs[k], row))
                sum += rep_get(&xs[k], row), m++;
        double mean = m ? sum / m : 0;
        for (int k = 0; k < n; k++)
            if (rep_sample_has(&xs[k], row))
                ss += (rep_get(&xs[k], row) - mean) * (rep_get(&xs[k], row) - mean);
        *out = row->ci && m > 1 ? stat_t975(m - 1) * sqrt(ss / (m - 1) / m) : NAN;
        if (*out < 1e-9 * fabs(mean)) /* equal samples: rounding, not spread */
            *out = 0;
        if (row->ci == CI_PERCENTILE && *out < rep_bucket_ms(mean))
            *out = rep_bucket_ms(mean);
    }
}

/* A floor under the mean latency's half-width from one run's batch means near a bound (an
 * open loop's rho and cs^2, struct steady_run): in heavy traffic the mean of a queue's
 * response times over T s has a relative variance of about 2 (1 + rho) / (rho mu
 * (1 - rho)^2) / T, mu the bound (M/M/1's number in system, Whitt), times (1 + cs^2) / 2 for
 * the service's variability (as it scales Pollaczek-Khinchine's mean), whatever the batches
 * show: a run that met none of the queue's long excursions has batch means that agree too
 * well, and a mean that reads low. The variance is theory's, not estimated: the normal's
 * 1.96, not Student's t. Only where the batches were merged (rep_batch_groups): a window
 * long against the queue's memory sees its excursions, and theory's M/M/1 variance
 * overstates a lightly loaded pool of servers; independent replications see them between
 * them. n batches of `secs` s of window in all. */
static void rep_ci_floor(const struct result *r, struct result *half, int n, double secs)
{
    const struct steady_run *sr = &r->sr;
    if (n < 2 || sr->bound < 0 || !(sr->rho > 0 && sr->rho < 1) || !isfinite(half->mean) ||
        !(secs > 0))
        return;
    double relvar = 2 * (1 + sr->rho) / (sr->rho * (1 - sr->rho) * (1 - sr->rho)) * (1 + sr->cs2) /
                    2 * sr->service / secs;
    half->mean = fmax(half->mean, 1.959964 * r->mean * sqrt(relvar));
}

/* The report of n replications: runs[i * MODEL_N + model]. */
static void rep_replicated(struct report *rp, const struct result *runs, int n)
{
    rp->n = n;
    rp->batches = 0;
    for (int mk = 0; mk < MODEL_N; mk++) {
        struct result *xs = xrealloc(NULL, (size_t)n, sizeof *xs), *r = &rp->r[mk];
        for (int i = 0; i < n; i++)
            xs[i] = runs[i * MODEL_N + mk];
        *r = xs[0]; /* the bounds, the window: the same in every replication */
        for (size_t j = 0; j < REP_NROWS; j++) {
            double sum = 0;
            for (int i = 0; i < n; i++)
                sum += rep_get(&xs[i], &rep_rows[j]);
            *(double *)((char *)r + rep_rows[j].off) = rep_rows[j].sum ? sum : sum / n;
        }
        rep_verdict(r, xs, n); /* the replications' evidence pooled */
        for (int f = 0; f < FAIL_N; f++) {
            r->failed_by_reason[f] = 0;
            for (int i = 0; i < n; i++)
                r->failed_by_reason[f] += xs[i].failed_by_reason[f]; /* they sum to failed */
        }
        rep_ci_rows(xs, n, &rp->ci[mk]);
        free(xs);
    }
}

/* A number for people: thousands separated, fixed decimals per format. */
static void rep_human(char *buf, size_t len, double v, int fmt)
{
    if (fmt == R_MIB)
        v /= 1048576.0;
    if (fmt == R_PCT)
        v *= 100;
    int decimals = fmt == R_INT ? 0 : fmt == R_MS ? 2 : 1;
    char raw[64];
    snprintf(raw, sizeof raw, "%.*f", decimals, v);
    char *dot = strchr(raw, '.'), *end = dot ? dot : raw + strlen(raw);
    int digits = (int)(end - raw) - (raw[0] == '-'), o = 0;
    for (const char *p = raw; *p && o < (int)len - 1; p++) {
        buf[o++] = *p;
        if (p < end - 1 && *p != '-' && --digits > 0 && digits % 3 == 0 && o < (int)len - 1)
            buf[o++] = ',';
    }
    buf[o] = 0;
}

/* Little's law with no queueing: N users / (R0 + Z), R0 the mean time of one request alone,
 * from the program's times only (JSON's ideal_rps; the bounds below add the models' costs).
 * Infinite when requests take no time and users do not think. */
static double rep_ideal_rps(const struct scenario *s)
{
    double r0 = 0;
    for (int i = 0; i < s->nsteps; i++) {
        const struct step *step = &s->prog[i];
        if (step->op == OP_CPU || step->op == OP_IO)
            r0 += dist_mean(&step->d);
        if (step->op == OP_CALL || step->op == OP_PAR) {
            double longest = 0; /* the mean of a maximum is more; this is a bound */
            for (int k = 0; k < step->nsvc; k++) {
                double mean = dist_mean(&s->svc[step->svc[k]].latency);
                if (mean > longest)
                    longest = mean;
            }
            r0 += longest;
        }
    }
    if (s->users == 0)
        return s->rate;
    return (double)s->users / ((r0 + dist_mean(&s->think)) / SEC);
}

/* BOUNDS ON THROUGHPUT
 *   What one request asks of a model when nothing queues, from the scenario's means and the
 *   model's own charges (model_ops: request_cpu, step_cpu, holders):
 *     CPU   the program's cpu() steps, cpu_per_request, cpu_per_call a call, connect_cpu a
 *           new connection (every call to a service without a pool), the model's cost per
 *           request (release_cpu; a virtual thread's start) and per blocking step (the
 *           kernel's wake-up; a park and an unpark). Context switches depend on the
 *           interleaving and are left out, and cache pressure only adds: the bound stays one.
 *     R0    that CPU plus each blocking step's mean wait (a par() its slowest call's,
 *           E[max], rep_par_wait).
 *     held  how long a request holds a thread: its CPU and the waits the model does not
 *           park in (a pool thread: every wait; a carrier: pinned waits and io()).
 *   Then, in req/s: Little's law N / (R0 + Z) (open loop: the arrival rate); the cores
 *   C / CPU; the pool: maxConnections / R0, threads / held, and per service its
 *   connections or its limit over its calls' time; the ports: a service without a pool opens a
 *   connection a call, and a port comes back range / TIME_WAIT times a second (tcp_tw_reuse:
 *   after 1 s). */
struct rep_demand {
    double cpu, r0, held; /* ns a request */
    int32_t holders;      /* threads that can hold one: the most of its holding steps */
    int held_wait;        /* some wait holds a thread: the thread pool bounds throughput */
    int calls[MAX_SERVICES];
};

/* The mean time one call to service v takes, connecting included when it is not pooled. */
static double rep_call_time(const struct scenario *s, int v)
{
    return dist_mean(&s->svc[v].latency) + dist_mean(&s->call_latency) +
           (s->svc[v].pool == 0 ? (double)s->svc[v].connect_time : 0);
}

/* A par() step waits for its slowest call: E[max over k of (L_k + c_k)] + E[net], L_k the
 * service's latency, c_k its connect time if unpooled, net the network's (net.call_latency),
 * by E[max] = integral over x > 0 of 1 - prod F_k(x - c_k) (Simpson, 4000 strips). With
 * the network's time random this is a lower bound on the step's mean (conditionally on the
 * L_k, max is convex: Jensen), so the bounds built on it stay bounds. */
static double rep_par_wait(const struct scenario *s, const struct step *st)
{
    double c[MAX_PAR], hi = 0, slowest = 0, sum = 0;
    int random = 0;
    for (int k = 0; k < st->nsvc; k++) {
        const struct service_cfg *v = &s->svc[st->svc[k]];
        c[k] = v->pool == 0 ? (double)v->connect_time : 0;
        hi = fmax(hi, c[k] + dist_end(&v->latency));
        slowest = fmax(slowest, c[k] + dist_mean(&v->latency));
        random |= v->latency.shape != DIST_CONST;
    }
    if (!random || hi <= 0) /* constant latencies: the slowest is the longest */
        return slowest + dist_mean(&s->call_latency);
    const int n = 4000;
    for (int i = 0; i <= n; i++) {
        double x = hi * i / n, all = 1;
        for (int k = 0; k < st->nsvc; k++)
            all *= dist_cdf(&s->svc[st->svc[k]].latency, x - c[k]);
        sum += (i == 0 || i == n ? 1 : i % 2 ? 4 : 2) * (1 - all);
    }
    return sum * hi / n / 3 + dist_mean(&s->call_latency);
}

/* One blocking step's mean wait, its CPU, and its calls counted into d. */
static double rep_step_demand(const struct model *m, const struct step *st, int in_sync,
                              struct rep_demand *d)
{
    const struct scenario *s = m->s;
    double wait = st->op == OP_IO ? dist_mean(&st->d) : 0;
    d->cpu += (double)m->ops->step_cpu(m, st->op, in_sync) + st->nsvc * (double)m->cpu_per_call;
    for (int k = 0; k < st->nsvc; k++) {
        int v = st->svc[k];
        d->calls[v]++;
        d->cpu += s->svc[v].pool == 0 ? (double)s->connect_cpu : 0;
        wait = fmax(wait, rep_call_time(s, v));
    }
    return st->nsvc > 1 ? fmax(wait, rep_par_wait(s, st)) : wait;
}

static struct rep_demand rep_demand(const struct model *m)
{
    const struct scenario *s = m->s;
    struct rep_demand d = {.cpu = (double)(m->cpu_per_request + m->ops->request_cpu(m))};
    int depth = 0;
    for (int i = 0; i < s->nsteps; i++) {
        const struct step *st = &s->prog[i];
        depth += st->op == OP_SYNC_BEGIN ? 1 : st->op == OP_SYNC_END ? -1 : 0;
        if (st->op == OP_SYNC_BEGIN || st->op == OP_SYNC_END)
            continue;
        int32_t holders = m->ops->holders(m, st->op, depth > 0);
        double wait = st->op == OP_CPU ? 0 : rep_step_demand(m, st, depth > 0, &d);
        d.cpu += st->op == OP_CPU ? dist_mean(&st->d) : 0;
        d.r0 += wait;
        d.holders = holders > d.holders ? holders : d.holders;
        if (holders > 0 && st->op != OP_CPU) {
            d.held += wait;
            d.held_wait = 1;
        }
    }
    d.r0 += d.cpu;
    d.held += d.cpu;
    return d;
}

/* Set bound k to `rps` (made as `what`) if it is less than what is there. */
static void rep_bound_offer(struct bounds *b, int k, double rps, const char *what)
{
    if (!(rps >= b->rps[k])) { /* NAN compares false: the first offer always lands */
        b->rps[k] = rps;
        snprintf(b->what[k], sizeof b->what[k], "%s", what);
    }
}

/* The pool: the connector's maxConnections (held for the whole request, in both models),
 * the threads a request holds, each service's connection pool and limit. */
static void rep_pool_bound(const struct model *m, const struct rep_demand *d, struct bounds *b)
{
    const struct scenario *s = m->s;
    char what[96];
    snprintf(b->what[BOUND_POOL], sizeof b->what[BOUND_POOL], "requests take no time");
    snprintf(what, sizeof what, "maxConnections %d / R0 %.4g ms", s->max_connections, d->r0 / 1e6);
    if (d->r0 > 0)
        rep_bound_offer(b, BOUND_POOL, s->max_connections / (d->r0 / SEC), what);
    if (d->held_wait) {
        snprintf(what, sizeof what, "%d threads / %.4g ms a request holds one", d->holders,
                 d->held / 1e6);
        rep_bound_offer(b, BOUND_POOL, d->holders / (d->held / SEC), what);
    }
    b->pool_queues = isnan(b->rps[BOUND_POOL]) ? INFINITY : b->rps[BOUND_POOL];
    for (int v = 0; v < s->nsvc; v++) {
        double busy = d->calls[v] * rep_call_time(s, v) / SEC; /* s a request holds one */
        const struct service_cfg *c = &s->svc[v];
        if (busy <= 0)
            continue;
        snprintf(what, sizeof what, "%s: %d pooled connections / %.4g ms a request", c->name,
                 c->pool, busy * 1e3);
        if (c->pool > 0)
            rep_bound_offer(b, BOUND_POOL, c->pool / busy, what);
        if (c->pool > 0)
            b->pool_queues = fmin(b->pool_queues, c->pool / busy);
        snprintf(what, sizeof what, "%s: limit %d calls / %.4g ms a request", c->name, c->limit,
                 busy * 1e3);
        if (c->limit > 0)
            rep_bound_offer(b, BOUND_POOL, c->limit / busy, what);
        if (c->limit > 0 && c->wait == SVC_WAIT_UNLIMITED)
            b->pool_queues = fmin(b->pool_queues, c->limit / busy);
    }
}

/* The ports: a service without a pool opens a connection per call. Only the side that closes
 * first holds TIME_WAIT: the bound exists when that is us (net.close_first = client). */
static void rep_port_bound(const struct scenario *s, const struct rep_demand *d, struct bounds *b)
{
    int range = s->port_high - s->port_low + 1;
    simtime tw = s->tw_reuse && s->time_wait > SEC ? SEC : s->time_wait;
    char what[128];
    snprintf(b->what[BOUND_PORTS], sizeof b->what[BOUND_PORTS], "%s",
             !s->time_wait ? "net.time_wait = 0: a port is free again at close"
             : s->close_first == CLOSE_SERVER
                 ? "the server closes first: TIME_WAIT is its, a new SYN takes it over"
                 : "every service called keeps its connections (pooled)");
    for (int v = 0; v < s->nsvc && tw > 0 && s->close_first == CLOSE_CLIENT; v++)
        if (s->svc[v].pool == 0 && d->calls[v] > 0) {
            snprintf(what, sizeof what,
                     "%s: %d ports / %.4g s TIME_WAIT (we close first) / %d calls a request",
                     s->svc[v].name, range, (double)tw / SEC, d->calls[v]);
            rep_bound_offer(b, BOUND_PORTS, range / ((double)tw / SEC) / d->calls[v], what);
        }
}

/* How many of the cores a model can keep busy at once: its threads that run CPU (pool
 * threads; carriers, `parallelism`), and under io() also those compensating for it (up to
 * max_pool_size, which then run CPU beside the others), at most the cores. */
static int rep_cpus(const struct model *m)
{
    const struct scenario *s = m->s;
    int32_t n = m->ops->holders(m, OP_CPU, 0);
    for (int i = 0; i < s->nsteps; i++)
        if (s->prog[i].op == OP_IO && m->ops->holders(m, OP_IO, 0) > n)
            n = m->ops->holders(m, OP_IO, 0);
    return n < s->cores ? (int)n : s->cores;
}

/* Standard deviations of chance a throughput may stray above a bound that is a mean (an
 * open loop's arrival rate) before it is called above it: a stationary run passes 4 sd
 * about once in 30,000 windows, where 2 (a 95% band) would say "above" in 1 of 40. */
#define REP_NOISE_Z 4.0

static void rep_bounds(const struct model *m, struct bounds *b)
{
    const struct scenario *s = m->s;
    struct rep_demand d = rep_demand(m);
    double z = dist_mean(&s->think);
    char what[96];
    for (int k = 0; k < BOUND_N; k++)
        b->rps[k] = NAN;
    snprintf(what, sizeof what, "%ld users / (R0 %.4g ms + Z %.4g ms)", s->users, d.r0 / 1e6,
             z / 1e6);
    if (s->users == 0)
        rep_bound_offer(b, BOUND_LITTLE, s->rate, "open loop: the arrival rate");
    else if (d.r0 + z > 0)
        rep_bound_offer(b, BOUND_LITTLE, s->users / ((d.r0 + z) / SEC), what);
    else
        snprintf(b->what[BOUND_LITTLE], sizeof what, "requests take no time, users do not think");
    int cpus = rep_cpus(m);
    if (cpus < s->cores)
        snprintf(what, sizeof what, "%d %s%s (of %d cores) / %.4g us a request", cpus,
                 m->ops->words->worker, cpus > 1 ? "s" : "", s->cores, d.cpu / 1e3);
    else
        snprintf(what, sizeof what, "%d cores / %.4g us a request", s->cores, d.cpu / 1e3);
    if (d.cpu > 0)
        rep_bound_offer(b, BOUND_CPU, cpus / (d.cpu / SEC), what);
    else
        snprintf(b->what[BOUND_CPU], sizeof what, "a request costs no CPU");
    rep_pool_bound(m, &d, b);
    rep_port_bound(s, &d, b);
    b->binding = -1;
    for (int k = 0; k < BOUND_N; k++)
        if (isfinite(b->rps[k]) && (b->binding < 0 || b->rps[k] < b->rps[b->binding]))
            b->binding = k;
    /* an open loop's bound is the arrival rate's mean: the arrivals in a window of T s are
     * Poisson, sd sqrt(rate T), so a run's rate strays from it by sqrt(rate / T) by chance */
    double window_s = (double)(s->duration - s->warmup) / SEC;
    b->noise = b->binding == BOUND_LITTLE && s->users == 0 && window_s > 0
                   ? REP_NOISE_Z * sqrt(s->rate / window_s)
                   : 0;
}

/* Why a model's throughput is above its binding bound, or NULL when it is not. A bound is
 * a steady-state limit; a window can beat it where requests started before it complete
 * inside it (the start-up transient, users in lockstep) or where sampled times ran short;
 * by less than the bound's own noise (b->noise: Poisson arrivals) it is chance, not above.
 * With a 95% interval (half-width `half`, NAN for one run) it is above only when the
 * interval's lower end is: a bound inside the interval is met, not beaten (rep_at_bound). */
static const char *rep_above_bound(const struct result *r, double half, char *buf, size_t len)
{
    const struct bounds *b = &r->bounds;
    if (b->binding < 0 || !(r->throughput_rps > b->rps[b->binding] + b->noise))
        return NULL;
    if (isfinite(half) && r->throughput_rps - half <= b->rps[b->binding])
        return NULL;
    snprintf(buf, len,
             "above its %s bound by %.2g%%: the %.4g s window also counts requests begun "
             "before it (the start-up transient), and sampled times can run under their means; "
             "a longer window comes down to the bound",
             bound_keys[b->binding], 100 * (r->throughput_rps / b->rps[b->binding] - 1),
             r->window_s);
    return buf;
}

/* A throughput above its binding bound whose 95% interval holds the bound: at it. */
static int rep_at_bound(const struct result *r, double half)
{
    const struct bounds *b = &r->bounds;
    return b->binding >= 0 && r->throughput_rps > b->rps[b->binding] && isfinite(half) &&
           r->throughput_rps - half <= b->rps[b->binding];
}

/* STEADY STATE
 *   A report's figures mean something only if the window is a steady state. Each run keeps
 *   what the verdict reads (rep_steady: the window's bins, its response-time tail, its load
 *   against the bounds), and rep_verdict pools the runs of a report (its replications, or
 *   the one run) and declares the window not steady with the first reason that applies:
 *     overloaded  open loop at or above the least of the CPU, pool and port bounds
 *                 (rho = rate / bound >= 1): queues grow without end, no steady state exists.
 *     no answer   no request completed in the window.
 *     relaxation  open loop below it: a queue forgets how it started in about its relaxation
 *                 time, (1 / bound) / (1 - sqrt(rho))^2 (M/M/1's, Abate and Whitt) times
 *                 max(1, (1 + cs^2) / 2) for the service's variability (rep_relax), which has
 *                 no limit as rho nears 1; the window must hold STEADY_RELAX of them, and
 *                 with batch means STEADY_MIN_BATCHES batches of STEADY_BATCH_RELAX each
 *                 (rep_batched merges shorter batches into fewer, longer ones).
 *     tail        the window must hold STEADY_RESPONSES response-time tails: the larger of
 *                 the p99 and in flight / throughput at the end (Little's law, which counts
 *                 the slow requests still out that the completed latencies cannot see; a
 *                 mean of those is biased low). Never negative.
 *     heavy tail  the window holds STEADY_RESPONSES of the time under which 99% of the
 *                 program's mean lies, a run's mean is nearly normal, and the requests in
 *                 flight at the end agree with Little's law (HEAVY TAILS, rep_tails).
 *     swings      throughput per bin varies far more than counting noise in over half of
 *                 the runs (rep_swings): waves, bursts, a sawtooth.
 *     memory      the batch means of the window stay correlated (lag-1 autocorrelation of
 *                 their residuals above its 1% critical value) even at STEADY_MIN_BATCHES
 *                 batches: the window is short against the system's memory.
 *     warm-up     the window's first batch differs from the rest of it,
 *     trend       the batch means lie on a sloping line:
 *                 each a Student-t test on the batch means of throughput and of mean
 *                 latency, pooled over the runs (each run's own mean removed, so that
 *                 evidence adds up across replications instead of any one run deciding),
 *                 four tests each at STEADY_ALPHA / 4 (Bonferroni): a stationary window whose
 *                 batch means are independent fails one in at most STEADY_ALPHA of reports.
 *                 A failed test counts when its change is also over STEADY_CHANGE of the
 *                 mean: a long run finds trends too small to matter.
 *                 The batches start at STEADY_BATCHES and halve while the lag-1 check finds
 *                 them correlated, so that the tests' independence holds. */
#define STEADY_RESPONSES   5
#define STEADY_RELAX       20
#define STEADY_BATCHES     20
#define STEADY_MIN_BATCHES 5
#define STEADY_ALPHA       0.01
/* a warm-up or trend smaller than this moves no printed figure much */
#define STEADY_CHANGE 0.02
#define STEADY_LAG1_Z 2.326 /* one-sided 1% of the standard normal */
/* HEAVY TAILS (rep_tails): the most skewness a run's mean may keep, the fewest requests a
 * run in flight above Little's law's count that say the window missed its slow ones */
#define STEADY_SKEW       0.5
#define STEADY_LITTLE_MIN 10
/* batch means (rep_batched): the relaxation times a batch must span to be independent */
#define STEADY_BATCH_RELAX 8
/* the warm-up (rep_fill): the fewest relaxation times a window must hold for its own
 * estimate of them to count (in fewer, a queue that grows all run reads as one) */
#define STEADY_FILL_RELAX 5

struct steady_series {
    double x[STEADY_BINS], t[STEADY_BINS]; /* values and bin centres, s */
    int n;
};

/* What a series of bins holds (rep_bins). */
enum bin_of { BIN_RATE, BIN_LAT, BIN_IN_SYSTEM };

/* Bins [from, n) of a model as a series: throughput (req/s), mean latency (ms) or the mean
 * of its samples' requests in flight. */
static struct steady_series rep_bins(const struct model *m, int from, enum bin_of of)
{
    const struct stats *st = &m->stats;
    int nb = model_nbins(m->s);
    double width = (double)m->s->duration / SEC / nb, iv = (double)m->s->sample_interval / SEC;
    struct steady_series ser = {.n = 0};
    for (int i = from; i < nb; i++) {
        if (!st->bin_samples[i] || (of == BIN_LAT && !st->bin_done[i]))
            continue;
        ser.t[ser.n] = (i + 0.5) * width;
        ser.x[ser.n++] = of == BIN_LAT ? st->bin_lat[i] / (double)st->bin_done[i] / 1e6
                         : of == BIN_IN_SYSTEM
                             ? st->bin_in_system[i] / st->bin_samples[i]
                             : (double)st->bin_done[i] / (st->bin_samples[i] * iv);
    }
    return ser;
}

static double rep_mean_of(const double *x, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += x[i];
    return n ? sum / n : 0;
}

/* MSER-5's end of the warm-up, in s, on the throughput bins from 0; 0 when the batches it
 * cuts after `after` s are not 3 standard errors and 2% from the mean of those it keeps (on
 * a stationary series MSER's minimum wanders: a cut must be a transient to count). A
 * scenario that leaves `warmup` to the default starts its window there or later (rep_warmup). */
static double rep_mser5(const struct model *m, double after)
{
    struct steady_series ser = rep_bins(m, 0, BIN_RATE);
    double y[STEADY_BINS / 5], best = INFINITY;
    int nbat = ser.n / 5, cut = 0;
    for (int j = 0; j < nbat; j++)
        y[j] = rep_mean_of(&ser.x[5 * j], 5);
    for (int d = 0; d <= nbat / 2 && nbat - d > 1; d++) {
        double mean = rep_mean_of(&y[d], nbat - d), ss = 0;
        for (int j = d; j < nbat; j++)
            ss += (y[j] - mean) * (y[j] - mean);
        if (ss / ((double)(nbat - d) * (nbat - d)) < best * (1 - 1e-12)) {
            best = ss / ((double)(nbat - d) * (nbat - d));
            cut = d;
        }
    }
    if (!cut)
        return 0;
    double end = ser.t[5 * cut] - (ser.t[1] - ser.t[0]) / 2,
           kept = rep_mean_of(&y[cut], nbat - cut);
    double sum = 0, var = 0;
    int k = 0;
    for (int j = 0; j < cut; j++)
        if (ser.t[5 * j] >= after) { /* cut batches inside the window */
            sum += y[j];
            k++;
        }
    for (int j = cut; j < nbat; j++)
        var += (y[j] - kept) * (y[j] - kept) / (nbat - cut - 1);
    double diff = k ? fabs(sum / k - kept) : 0;
    return diff > 3 * sqrt(var / k + var / (nbat - cut)) && diff > 0.02 * kept ? end : 0;
}

/* The lag-`lag` autocovariance of x[0..n), whose mean is `mean`, times n. */
static double rep_autocov(const double *x, int n, double mean, int lag)
{
    double c = 0;
    for (int i = 0; i + lag < n; i++)
        c += (x[i] - mean) * (x[i + lag] - mean);
    return c;
}

/* The end of the warm-up, in s, that the number in system shows: a queue filling from empty
 * barely moves throughput, so MSER-5 (rep_mser5) misses it. The queue forgets its start over
 * its relaxation time, read off its own bins after `after` s as twice their integrated
 * autocorrelation time (Geyer's initial positive sequence: lags summed in pairs while a
 * pair's sum is positive): near a bound a queue moves as a reflected Brownian motion, whose
 * relaxation time is twice that (M/M/1's at rho 0.97 too). It counts only when the window holds
 * STEADY_FILL_RELAX of it and the bins it cuts hold fewer requests than those it keeps: the
 * queue was filling (a peak at the start is MSER-5's). */
static double rep_fill(const struct model *m, double after)
{
    int nb = model_nbins(m->s), from = (int)ceil(after * SEC * nb / (double)m->s->duration);
    struct steady_series all = rep_bins(m, 0, BIN_IN_SYSTEM),
                         win = rep_bins(m, from, BIN_IN_SYSTEM);
    const double *x = win.x;
    double width = (double)m->s->duration / SEC / nb, mean = rep_mean_of(x, win.n), sum = 0.5;
    double var = rep_autocov(x, win.n, mean, 0);
    if (win.n < 4 || !(var > 0))
        return 0;
    for (int lag = 1; lag + 1 < win.n / 2; lag += 2) {
        double pair = rep_autocov(x, win.n, mean, lag) + rep_autocov(x, win.n, mean, lag + 1);
        if (pair <= 0)
            break;
        sum += pair / var;
    }
    double relax = 2 * sum * width;
    if (relax * STEADY_FILL_RELAX > win.n * width) /* one excursion: no relaxation time */
        return 0;
    int cut = 0;
    while (cut < all.n && all.t[cut] < relax)
        cut++;
    return cut && cut < all.n && rep_mean_of(all.x, cut) < rep_mean_of(&all.x[cut], all.n - cut)
               ? relax
               : 0;
}

/* The end of the warm-up, in s, that a scenario leaving `warmup` to the default gets
 * (sim_warmup_auto): the later of throughput's (rep_mser5) and the queue's (rep_fill). */
static double rep_warmup(const struct model *m, double after)
{
    return fmax(rep_mser5(m, after), rep_fill(m, after));
}

/* Throughput swings: 1 with the sentence in why, else 0. */
static int rep_swings(const struct model *m, const struct steady_series *ser, char *why, size_t len)
{
    int n = ser->n, period = 0;
    double mean = rep_mean_of(ser->x, n), var = 0, lo = INFINITY, hi = 0, best = 0.5;
    double width = (double)m->s->duration / SEC / model_nbins(m->s);
    for (int i = 0; i < n; i++) {
        var += (ser->x[i] - mean) * (ser->x[i] - mean) / n;
        lo = fmin(lo, ser->x[i]);
        hi = fmax(hi, ser->x[i]);
    }
    double count = mean * width; /* completions a bin: counting noise's variance */
    if (n < 4 || !(mean > 0) || var * width * width <= 5 * count || sqrt(var) <= 0.1 * mean)
        return 0;
    for (int k = 2; k <= n / 2; k++) {
        double c = 0;
        for (int i = 0; i + k < n; i++)
            c += (ser->x[i] - mean) * (ser->x[i + k] - mean);
        if (c / (n * var) > best) {
            best = c / (n * var);
            period = k;
        }
    }
    int o = snprintf(why, len, "throughput swings from %.4g to %.4g req/s between %.3g s stretches",
                     lo, hi, width);
    if (period && o > 0 && (size_t)o < len)
        snprintf(why + o, len - (size_t)o, ", repeating about every %.3g s", period * width);
    else if (o > 0 && (size_t)o < len)
        snprintf(why + o, len - (size_t)o, " (waves, bursts or a sawtooth)");
    return 1;
}

/* A request's times as the verdict reads them: the sum of its steps' times (a call's the
 * service's latency and the network's; a par()'s calls counted as if in turn, which
 * overstates its spread: the verdict errs on the side of "not steady"), all of them or only
 * its cpu() steps; and the longest mass99 of any of its random times. */
struct rep_moments {
    double var, k3, mass99; /* ns^2, ns^3, ns */
};

static void rep_moment_add(struct rep_moments *mo, const struct dist *d)
{
    double var, k3;
    dist_moments(d, &var, &k3);
    mo->var += var;
    mo->k3 += k3;
    if (d->shape != DIST_CONST)
        mo->mass99 = fmax(mo->mass99, dist_mass99(d));
}

static struct rep_moments rep_moments(const struct scenario *s, int cpu_only)
{
    struct rep_moments mo = {0, 0, 0};
    for (int i = 0; i < s->nsteps; i++) {
        const struct step *st = &s->prog[i];
        if (st->op == OP_CPU || (st->op == OP_IO && !cpu_only))
            rep_moment_add(&mo, &st->d);
        for (int k = 0; k < st->nsvc && !cpu_only; k++) {
            rep_moment_add(&mo, &s->svc[st->svc[k]].latency);
            rep_moment_add(&mo, &s->call_latency);
        }
    }
    return mo;
}

/* An open loop's relaxation time (s) below its least bound `least`: M/M/1's (Abate and
 * Whitt), (1 / bound) / (1 - sqrt(rho))^2, stretched by the time's variability: a queue's
 * memory grows about as (1 + cs^2) / 2 (Pollaczek-Khinchine's factor), which exponential
 * service (cs^2 = 1) leaves as it is. */
static double rep_relax(double least, double rho, double cs2)
{
    return rho < 1 ? 1 / least / pow(1 - sqrt(rho), 2) * fmax(1, (1 + cs2) / 2) : INFINITY;
}

/* What the verdict needs of one run (r's figures and bounds already made), into r->sr. */
static void rep_steady(const struct model *m, struct result *r)
{
    const struct scenario *s = m->s;
    const struct stats *st = &m->stats;
    struct steady_run *sr = &r->sr;
    int nb = model_nbins(s), from = (int)ceil((double)s->warmup * nb / (double)s->duration);
    double iv = (double)s->sample_interval / SEC, least = INFINITY;
    sr->n = 0;
    for (int i = from; i < nb; i++)
        if (st->bin_samples[i]) {
            sr->done[sr->n] = (double)st->bin_done[i];
            sr->lat[sr->n] = st->bin_lat[i];
            sr->secs[sr->n++] = st->bin_samples[i] * iv;
        }
    double p99 = r->p99 / 1e3,
           little = r->throughput_rps > 0 ? r->in_flight / r->throughput_rps : 0;
    struct rep_moments all = rep_moments(s, 0);
    struct rep_demand d = rep_demand(m);
    sr->tail = fmax(p99, little);
    sr->tail_little = little > p99;
    sr->little = little;
    sr->ndone = (double)st->completed_window;
    sr->skew = all.var > 0 ? all.k3 / pow(all.var, 1.5) : 0;
    sr->cs2_all = d.r0 > 0 ? all.var / (d.r0 * d.r0) : 0;
    sr->mass99 = all.mass99 / SEC;
    sr->bound = -1;
    sr->rho = sr->relax = sr->cs2 = sr->service = 0; /* closed loop: the users bound a queue */
    for (int k = BOUND_CPU; k < BOUND_N && !s->users; k++) {
        /* a limit that sheds (service.wait) bounds throughput, not the queue: a loss system */
        double x = k == BOUND_POOL ? r->bounds.pool_queues : r->bounds.rps[k];
        if (isfinite(x) && x < least) {
            least = x;
            sr->bound = k;
        }
    }
    if (sr->bound >= 0) { /* the CPU serves cpu() steps; a pool or a port is held throughout */
        double mean = sr->bound == BOUND_CPU ? d.cpu : d.r0;
        sr->rho = s->rate / least;
        sr->service = 1 / least;
        sr->cs2 = mean > 0 ? rep_moments(s, sr->bound == BOUND_CPU).var / (mean * mean) : 0;
        sr->relax = rep_relax(least, sr->rho, sr->cs2);
    }
    struct steady_series win = rep_bins(m, from, BIN_RATE);
    sr->swings = rep_swings(m, &win, sr->swings_why, sizeof sr->swings_why);
}

/* P(|T| > t) for Student's t with df degrees of freedom (Abramowitz and Stegun 26.7.3 and
 * 26.7.4, exact for whole df). */
static double rep_t_pvalue(double t, int df)
{
    double th = atan(fabs(t) / sqrt(df)), c2 = cos(th) * cos(th), term = 1, sum = 1;
    for (int k = df % 2 ? 3 : 2; k <= df - 2; k += 2) {
        term *= (k - 1.0) / k * c2;
        sum += term;
    }
    if (df % 2 == 0)
        return 1 - sin(th) * sum;
    return 1 - (df == 1 ? 2 * th / M_PI : 2 / M_PI * (th + sin(th) * cos(th) * sum));
}

/* Run sr's window in b batches of whole bins: throughput (req/s) or mean latency (ms) each,
 * into y. Returns 0 when the window has fewer bins than batches or a batch has none of it. */
static int rep_batch_means(const struct steady_run *sr, int b, int lat, double *y)
{
    if (sr->n < b)
        return 0;
    for (int k = 0; k < b; k++) {
        double done = 0, sum = 0, secs = 0;
        for (int i = k * sr->n / b; i < (k + 1) * sr->n / b; i++) {
            done += sr->done[i];
            sum += sr->lat[i];
            secs += sr->secs[i];
        }
        if (lat ? !(done > 0) : !(secs > 0))
            return 0;
        y[k] = lat ? sum / done / 1e6 : done / secs;
    }
    return 1;
}

/* One pooled test on a series: its statistic, degrees of freedom and two-sided p-value,
 * and the relative change it found. */
struct steady_test {
    double t, p, change;
    int df;
};

/* The pooled sums over the runs usable at b batches (see STEADY STATE). */
struct steady_pool {
    int k, b;                      /* runs used, batches each */
    double grand, first, stt, sty; /* sum of run means, of first-batch contrasts, slope sums */
    double ss0, ssr, lag;          /* squares about run means, about the line; lag-1 products */
};

static void rep_pool(const struct result *xs, int n, int lat, int b, struct steady_pool *p)
{
    double y[STEADY_BATCHES];
    memset(p, 0, sizeof *p);
    p->b = b;
    for (int pass = 0; pass < 2; pass++) /* the slope first, then the residuals about it */
        for (int i = 0; i < n; i++) {
            if (!rep_batch_means(&xs[i].sr, b, lat, y))
                continue;
            double m = rep_mean_of(y, b), slope = pass ? p->sty / p->stt : 0, prev = 0;
            for (int j = 0; j < b; j++) {
                double tc = j - (b - 1) / 2.0, e = y[j] - m, res = e - slope * tc;
                if (pass == 0) {
                    p->stt += tc * tc;
                    p->sty += tc * e;
                    p->ss0 += e * e;
                } else {
                    p->ssr += res * res;
                    p->lag += j ? res * prev : 0;
                }
                prev = res;
            }
            if (pass == 0) {
                p->k++;
                p->grand += m;
                p->first += (y[0] - m) * b / (b - 1.0);
            }
        }
}

/* The warm-up and trend tests on throughput (lat = 0) or mean latency over n runs, into
 * t[0] and t[1], at *b batches. Returns 1 when the batches stay correlated at the fewest,
 * -1 when no run has enough bins to test, else 0. */
static int rep_series_tests(const struct result *xs, int n, int lat, struct steady_test t[2],
                            int *b, double *r1)
{
    struct steady_pool p;
    *b = STEADY_BATCHES;
    while (*b / 2 >= STEADY_MIN_BATCHES && xs[0].sr.n < *b)
        *b /= 2;
    for (;; *b /= 2) {
        rep_pool(xs, n, lat, *b, &p);
        if (p.k == 0)
            return -1;
        *r1 = p.ssr > 0 ? p.lag / p.ssr : 0;
        if (*r1 <= STEADY_LAG1_Z / sqrt(p.k * (*b - 1.0)))
            break;
        if (*b / 2 < STEADY_MIN_BATCHES)
            return 1;
    }
    double mean = p.grand / p.k, slope = p.sty / p.stt, s2 = p.ssr / (p.k * (*b - 1) - 1),
           v0 = p.ss0 / (p.k * (*b - 1)) * *b / (*b - 1.0) / p.k;
    t[0] = (struct steady_test){.t = v0 > 0 ? p.first / p.k / sqrt(v0) : 0,
                                .df = p.k * (*b - 1),
                                .change = mean > 0 ? p.first / p.k / mean : 0};
    t[1] = (struct steady_test){.t = s2 > 0 ? slope / sqrt(s2 / p.stt) : 0,
                                .df = p.k * (*b - 1) - 1,
                                .change = mean > 0 ? slope * (*b - 1) / mean : 0};
    for (int i = 0; i < 2; i++)
        t[i].p = rep_t_pvalue(t[i].t, t[i].df);
    return 0;
}

/* The batch-means tests of STEADY STATE, with the sentence in why: 1 when a warm-up or
 * trend test fails, 2 when the batches stay correlated (and no test fails), else 0. */
static int rep_batch_verdict(const struct result *xs, int n, char *why, size_t len)
{
    static const char *const series[2] = {"throughput", "mean latency"};
    struct steady_test t[2][2];
    int b[2], worst = -1, corr[2];
    double r1[2];
    for (int lat = 0; lat < 2; lat++) {
        corr[lat] = rep_series_tests(xs, n, lat, t[lat], &b[lat], &r1[lat]);
        for (int k = 0; k < 2 && corr[lat] == 0; k++)
            if (t[lat][k].p < STEADY_ALPHA / 4 && fabs(t[lat][k].change) > STEADY_CHANGE &&
                (worst < 0 || t[lat][k].p < t[worst / 2][worst % 2].p))
                worst = 2 * lat + k;
    }
    const struct steady_test *w = worst < 0 ? NULL : &t[worst / 2][worst % 2];
    if (w && worst % 2 == 0)
        snprintf(why, len,
                 "not steady: a warm-up inside the window: %s in its first %d%% is %+.0f%% off "
                 "the rest (t = %.1f, p = %.1e, %d run%s x %d batch means); set warmup longer",
                 series[worst / 2], 100 / b[worst / 2], 100 * w->change, w->t, w->p, n,
                 n > 1 ? "s" : "", b[worst / 2]);
    else if (w)
        snprintf(why, len,
                 "not steady: %s trends by %+.0f%% across the window (t = %.1f, p = %.1e, %d "
                 "run%s x %d batch means)",
                 series[worst / 2], 100 * w->change, w->t, w->p, n, n > 1 ? "s" : "", b[worst / 2]);
    for (int lat = 0; lat < 2 && !w; lat++)
        if (corr[lat] > 0) {
            snprintf(why, len,
                     "not steady: %s batch means stay correlated at %d batches a run (lag-1 "
                     "r = %.2f): the window is short against the system's memory",
                     series[lat], b[lat], r1[lat]);
            return 2;
        }
    return w != NULL;
}

/* "Not steady" for a window of w s that holds fewer than `need` relaxation times. */
static void rep_why_relax(char *why, size_t len, const struct steady_run *sr, double w, int need)
{
    snprintf(why, len,
             "not steady: the window is %.2g relaxation times; need %d (at %.1f%% of the %s "
             "bound, service cs^2 %.2g, a queue forgets its start in about %.3g s: (1/bound) / "
             "(1 - sqrt(rho))^2 x max(1, (1 + cs^2)/2))",
             w / sr->relax, need, 100 * sr->rho, bound_keys[sr->bound], sr->cs2, sr->relax);
}

/* The 99.5% point of the mean of n exponentials of mean 1 (Gamma(n)/n, Wilson and
 * Hilferty): how far a pooled count of requests in flight strays above its mean by chance,
 * when the count is no more variable than an M/M/1 queue's (geometric). */
static double rep_gamma995(int n)
{
    double c = 1 - 1 / (9.0 * n) + 2.5758 / (3 * sqrt(n));
    return c * c * c;
}

/* HEAVY TAILS  A mean response time is carried by its longest requests. The window must hold
 * STEADY_RESPONSES of the time below which 99% of the program's mean lies (dist_mass99: a
 * lognormal of p99/p50 300 makes 1% of its mean above 122,000 p50), and a run must complete
 * enough requests that their mean is nearly normal: the skewness of a mean of N is the
 * skewness of one over sqrt(N), and Student's t assumes it near 0 (at most STEADY_SKEW).
 * Little's law checks what the window missed: in flight at the end over throughput is the
 * mean response time of a steady state; pooled over the runs, above the mean it reports by
 * more than chance (rep_gamma995, widened by (1 + cs^2) / 2 as the number in an M/G/1 is, and
 * STEADY_LITTLE_MIN requests a run) means the requests still out are slower than those
 * counted. Returns 1 with the sentence in why. */
static int rep_tails(const struct result *xs, int n, char *why, size_t len)
{
    const struct steady_run *s0 = &xs[0].sr;
    double w = xs[0].window_s, done = 0, out = 0, little = 0;
    for (int i = 0; i < n; i++) {
        done += xs[i].sr.ndone / n;
        out += xs[i].in_flight;
        little += xs[i].throughput_rps * xs[i].mean / 1e3; /* X W: the in flight expected */
    }
    if (w < STEADY_RESPONSES * s0->mass99)
        snprintf(why, len,
                 "not steady: 1%% of the mean response time is made by requests over %.3g s (the "
                 "program's heaviest time), and the %.3g s window holds %.2g of them, not %d: "
                 "latency reads low",
                 s0->mass99, w, w / s0->mass99, STEADY_RESPONSES);
    else if (s0->skew / sqrt(fmax(done, 1)) > STEADY_SKEW)
        snprintf(why, len,
                 "not steady: a request's time is skewed (skewness %.3g), so a mean of the %.0f "
                 "requests a run completes is still skewed (%.2g): its interval misses high; "
                 "need about %.2g requests a run",
                 s0->skew, done, s0->skew / sqrt(fmax(done, 1)), pow(s0->skew / STEADY_SKEW, 2));
    else if (out > little * rep_gamma995(n) * fmax(1, (1 + s0->cs2_all) / 2) &&
             out - little >= STEADY_LITTLE_MIN * n)
        snprintf(why, len,
                 "not steady: %.0f requests in flight at the end, where Little's law expects "
                 "%.0f from the mean response time: those still out are slower than those "
                 "counted, so latency reads low",
                 out / n, little / n);
    else
        return 0;
    return 1;
}

/* The verdict on a window from its n runs' evidence (xs[i].sr), into out (which may be
 * xs[0]): steady, and why or why not in one sentence. */
static void rep_verdict(struct result *out, const struct result *xs, int n)
{
    const struct steady_run *s0 = &xs[0].sr;
    double tail = 0, x = 0, w = xs[0].window_s;
    int swings = 0, swung = -1, tested;
    char *why = out->steady_why;
    size_t len = sizeof out->steady_why;
    for (int i = 0; i < n; i++) {
        tail += xs[i].sr.tail / n;
        x += xs[i].throughput_rps / n;
        if (xs[i].sr.swings && swung < 0)
            swung = i;
        swings += xs[i].sr.swings;
    }
    char tail_s[48];
    snprintf(tail_s, sizeof tail_s, tail < 1 ? "%s %.3g ms" : "%s %.3g s",
             s0->tail_little ? "in flight / throughput" : "p99", tail < 1 ? tail * 1e3 : tail);
    out->steady = 0;
    if (s0->rho >= 1)
        snprintf(why, len,
                 "not steady: overloaded, no steady state exists: the arrival rate is %.0f%% of "
                 "the %s bound, so queues grow without end",
                 100 * s0->rho, bound_keys[s0->bound]);
    else if (!(x > 0))
        snprintf(why, len, "not steady: no request completed in the window");
    else if (w < STEADY_RELAX * s0->relax)
        rep_why_relax(why, len, s0, w, STEADY_RELAX);
    else if (w < STEADY_RESPONSES * tail)
        snprintf(why, len,
                 "not steady: the %.3g s window is %.2g response-time tails (%s), not %d: slower "
                 "requests are still out, so latency reads low",
                 w, w / tail, tail_s, STEADY_RESPONSES);
    else if (rep_tails(xs, n, why, len))
        ; /* a heavy tail the window or the runs cannot hold, or Little's law disagrees */
    else if ((tested = rep_batch_verdict(xs, n, why, len)) == 1)
        ; /* a warm-up or a trend */
    else if (2 * swings > n)
        snprintf(why, len, "not steady: %s", xs[swung].sr.swings_why);
    else if (tested == 0) {
        out->steady = 1;
        snprintf(why, len,
                 "steady: the %.3g s window is %.0f response-time tails (%s), with no trend, "
                 "warm-up or swing",
                 w, w / tail, tail_s);
    }
}

/* Batches [from, to) of a model's window as one batch's result: its headline figures. */
static struct result rep_batch_result(const struct model *m, int from, int to)
{
    const struct stats *st = &m->stats;
    double len = (double)(m->s->duration - m->s->warmup) / st->nbatch * (to - from); /* ns */
    simtime busy_to = to < st->nbatch ? st->batch[to].busy_from : cpu_busy_now(m);
    struct hist *lat = hist_new();
    double done = 0, lat_sum = 0;
    for (int i = from; i < to; i++) {
        done += (double)st->batch[i].done;
        lat_sum += st->batch[i].lat_sum;
        hist_merge(lat, st->batch[i].lat);
    }
    struct result x = {0};
    x.throughput_rps = done / (len / SEC);
    rep_latency(&x, lat, lat_sum, done);
    x.cpu_util = (double)(busy_to - st->batch[from].busy_from) / ((double)m->s->cores * len);
    free(lat);
    return x;
}

/* How many batch means a window of k batches gives: batches of an open loop near its bound
 * are merged, neighbours into equal groups where k allows, until each spans
 * STEADY_BATCH_RELAX relaxation times (its queue's memory: shorter ones are correlated, and
 * their interval too narrow). Fewer than STEADY_MIN_BATCHES such batches give no honest
 * interval: the window is then not steady (rep_batch_short). */
static int rep_batch_groups(const struct result *r, int k)
{
    double fit = r->window_s / (STEADY_BATCH_RELAX * r->sr.relax);
    if (!(r->sr.relax > 0) || fit >= k || k <= STEADY_MIN_BATCHES)
        return k;
    for (int g = (int)fmin(fit, k); g >= STEADY_MIN_BATCHES; g--)
        if (k % g == 0)
            return g;
    return fit > STEADY_MIN_BATCHES ? (int)fit : STEADY_MIN_BATCHES;
}

/* A window too short for STEADY_MIN_BATCHES batches of STEADY_BATCH_RELAX relaxation times
 * is not steady, with the relaxation times it needs. */
static void rep_batch_short(struct result *r, int k)
{
    const int need = STEADY_MIN_BATCHES * STEADY_BATCH_RELAX;
    if (r->steady && r->sr.relax > 0 && k >= STEADY_MIN_BATCHES &&
        r->window_s < need * r->sr.relax) {
        r->steady = 0;
        rep_why_relax(r->steady_why, sizeof r->steady_why, &r->sr, r->window_s, need);
    }
}

/* The report of one run cut into batches (model_batches): intervals from batch means, the
 * same number for both models (the report prints one). */
static void rep_batched(struct report *rp, const struct model ms[MODEL_N])
{
    int k = ms[0].stats.nbatch, g = k;
    struct result *xs = xrealloc(NULL, (size_t)k, sizeof *xs);
    rp->batches = 1;
    for (int mk = 0; mk < MODEL_N; mk++) {
        rep_result(&ms[mk], &rp->r[mk]);
        rep_batch_short(&rp->r[mk], k);
        int gk = rep_batch_groups(&rp->r[mk], k);
        g = gk < g ? gk : g;
    }
    for (int mk = 0; mk < MODEL_N; mk++) {
        for (int i = 0; i < g; i++)
            xs[i] = rep_batch_result(&ms[mk], i * k / g, (i + 1) * k / g);
        rep_ci_rows(xs, g, &rp->ci[mk]);
        if (g < k) /* a window short against the queue's memory: heavy traffic's floor */
            rep_ci_floor(&rp->r[mk], &rp->ci[mk], g, rp->r[mk].window_s);
    }
    rp->n = g;
    free(xs);
}

/* The bounds of both models, which binds, and the share of it each achieved. */
static void rep_text_bounds(FILE *out, const struct result res[MODEL_N],
                            const struct result ci[MODEL_N])
{
    char a[32], b[32], note[320];
    fprintf(out, "\n  %-30s %14s %14s\n", "bounds on throughput (req/s)", "platform", "virtual");
    for (int k = 0; k < BOUND_N; k++) {
        double p = res[0].bounds.rps[k], v = res[1].bounds.rps[k];
        rep_human(a, sizeof a, p, R_RATE);
        rep_human(b, sizeof b, v, R_RATE);
        fprintf(out, "  %-30s %14s %14s\n", bound_labels[k], isfinite(p) ? a : "-",
                isfinite(v) ? b : "-");
    }
    for (int mk = 0; mk < MODEL_N; mk++) {
        const struct bounds *bd = &res[mk].bounds;
        if (bd->binding < 0) {
            fprintf(out, "  %s: no bound applies\n", model_names[mk]);
            continue;
        }
        fprintf(out, "  %s: %s binds (%s); achieved %.0f%% of it\n", model_names[mk],
                bound_keys[bd->binding], bd->what[bd->binding],
                100 * res[mk].throughput_rps / bd->rps[bd->binding]);
        double half = ci[mk].throughput_rps;
        if (rep_above_bound(&res[mk], half, note, sizeof note))
            fprintf(out, "    %s\n", note);
        else if (rep_at_bound(&res[mk], half))
            fprintf(out, "    at its %s bound (within the 95%% interval)\n",
                    bound_keys[bd->binding]);
    }
}

/* A table cell: the figure, and "± half" when it has an interval. Returns the width to
 * print it in a column of `col` characters ("±" is two bytes and one column). */
static int rep_cell(char *buf, size_t len, double v, double half, int fmt, int col)
{
    char a[32], b[32];
    rep_human(a, sizeof a, v, fmt);
    if (!isfinite(half)) {
        snprintf(buf, len, "%s", a);
        return col;
    }
    rep_human(b, sizeof b, half, fmt);
    snprintf(buf, len, "%s \u00b1 %s", a, b);
    return col + 1;
}

/* Where the intervals come from, in one line. */
static void rep_text_intervals(FILE *out, const struct scenario *s, const struct report *rp)
{
    if (rp->n < 2)
        fprintf(out, "  one run: no intervals (--replications N or --batches K give them)\n");
    else if (rp->batches)
        fprintf(out, "  \u00b1 95%% interval from %d batch means of one run\n", rp->n);
    else
        fprintf(out,
                "  \u00b1 95%% interval over %d replications (seeds derived from %" PRIu64
                "); figures are their means, request counts their sums\n",
                rp->n, s->seed);
}

static void rep_text(FILE *out, const struct scenario *s, const char *path, const struct report *rp)
{
    const struct result *res = rp->r;
    char a[80], b[80];
    fprintf(out, "Loom Lab simulation: %s (%s, seed %" PRIu64 ")\n", s->name, path, s->seed);
    if (s->users)
        fprintf(out, "  %ld users closed loop, think %.1f ms, ", s->users,
                dist_mean(&s->think) / 1e6);
    else
        fprintf(out, "  open loop %.1f req/s, ", s->rate);
    fprintf(out, "%d cores, %.1f s simulated (statistics after %.1f s%s)\n", s->cores,
            (double)s->duration / SEC, (double)s->warmup / SEC,
            s->warmup_auto == 2 ? ", the warm-up MSER-5 and the queue's relaxation found" : "");
    fprintf(out, "  program: %s\n", s->program_text);
    if (s->auth)
        fprintf(out, "  auth: %s, a bearer token checked first, %.1f us of CPU per request\n",
                auth_names[s->auth], (double)s->auth_cpu[s->auth] / US);
    fprintf(out, "  platform: maxThreads %d, minSpare %d;  virtual: parallelism %d carriers\n",
            s->max_threads, s->min_spare, s->parallelism);
    if (s->calibrated[0])
        fprintf(out, "  from calibration: %s\n", s->calibrated);
    rep_text_intervals(out, s, rp);
    fputc('\n', out);
    fprintf(out, "  %-30s %20s %20s %10s\n", "", "platform", "virtual", "v / p");
    for (size_t i = 0; i < REP_NROWS; i++) {
        const struct rep_row *row = &rep_rows[i];
        if (!rep_shown(row, res[0].scope))
            continue;
        double p = rep_get(&res[MODEL_PLATFORM], row), v = rep_get(&res[MODEL_VIRTUAL], row);
        int wa = rep_cell(a, sizeof a, p, rep_get(&rp->ci[MODEL_PLATFORM], row), row->fmt, 20);
        int wb = rep_cell(b, sizeof b, v, rep_get(&rp->ci[MODEL_VIRTUAL], row), row->fmt, 20);
        fprintf(out, "  %-30s %*s %*s", row->label, wa, a, wb, b);
        if (p > 0 && (row->fmt != R_INT || v > 0))
            fprintf(out, " %9.2fx", v / p);
        fputc('\n', out);
    }
    for (int k = 0; k < FAIL_N; k++)
        if (res[0].failed_by_reason[k] > 0 || res[1].failed_by_reason[k] > 0)
            fprintf(out, "  %-30s %20.0f %20.0f   %s\n", fail_names[k], res[0].failed_by_reason[k],
                    res[1].failed_by_reason[k], fail_docs[k]);
    rep_text_bounds(out, res, rp->ci);
    for (int mk = 0; mk < MODEL_N; mk++)
        fprintf(out, "  %s: %s\n", model_names[mk], res[mk].steady_why);
}

/* A JSON string after `key` (the text before the value, e.g. ", \"name\": "): quotes,
 * backslashes and control characters escaped. */
static void rep_json_string(FILE *out, const char *key, const char *str)
{
    fputs(key, out);
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)str; *p; p++)
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    fputc('"', out);
}

/* A number for JSON after `key`, as rep_json_string's. JSON has no inf or nan: those are null
 * (the caller says why). */
static void rep_json_number(FILE *out, const char *key, const char *fmt, double v)
{
    fputs(key, out);
    if (isfinite(v))
        fprintf(out, fmt, v);
    else
        fputs("null", out);
}

/* "bounds": {the four, "binding", "why_null": {...} for those that do not apply, and
 * "above_bound" when the throughput is above the binding one (rep_above_bound)}. */
static void rep_json_bounds(FILE *out, const struct result *r, double half)
{
    const struct bounds *b = &r->bounds;
    char note[320];
    int nulls = 0;
    fputs("\"bounds\": {", out);
    for (int k = 0; k < BOUND_N; k++) {
        fprintf(out, "\"%s\": ", bound_keys[k]);
        rep_json_number(out, "", "%.6g", b->rps[k]);
        fputs(", ", out);
    }
    fprintf(out, "\"binding\": \"%s\", \"why_null\": {",
            b->binding >= 0 ? bound_keys[b->binding] : "none");
    for (int k = 0; k < BOUND_N; k++)
        if (!isfinite(b->rps[k])) {
            fprintf(out, "%s\"%s\": ", nulls++ ? ", " : "", bound_keys[k]);
            rep_json_string(out, "", b->what[k]);
        }
    fputc('}', out);
    if (rep_above_bound(r, half, note, sizeof note))
        rep_json_string(out, ", \"above_bound\": ", note);
    fputc('}', out);
}

/* One model's object: the rows (a key with a '.' opens a sub-object; rows sharing a prefix
 * are adjacent), the failures by reason, the bounds. */
static void rep_json_model(FILE *out, const struct result *r, const struct result *ci)
{
    const char *open = NULL;
    fputc('{', out);
    for (size_t i = 0; i < REP_NROWS; i++) {
        if (!rep_shown(&rep_rows[i], r->scope))
            continue;
        const char *key = rep_rows[i].key, *dot = strchr(key, '.');
        size_t plen = dot ? (size_t)(dot - key) : 0;
        int same = open && dot && strncmp(open, key, plen) == 0 && open[plen] == '.';
        if (open && !same) {
            fputc('}', out);
            open = NULL;
        }
        if (i)
            fputs(", ", out);
        if (dot && !same) {
            fprintf(out, "\"%.*s\": {", (int)plen, key);
            open = key;
        }
        fprintf(out, "\"%s\": ", dot ? dot + 1 : key);
        rep_json_number(out, "", rep_row_fmt(&rep_rows[i]), rep_get(r, &rep_rows[i]));
        if (rep_rows[i].ci) { /* "KEY_ci95": the half-width, null without an interval */
            fprintf(out, ", \"%s_ci95\": ", dot ? dot + 1 : key);
            rep_json_number(out, "", "%.4g", rep_get(ci, &rep_rows[i]));
        }
    }
    if (open)
        fputc('}', out);
    fputs(", \"failed_by_reason\": {", out);
    for (int k = 0; k < FAIL_N; k++)
        if (k != FAIL_ERROR || r->scope)
            fprintf(out, "%s\"%s\": %.0f", k ? ", " : "", fail_names[k], r->failed_by_reason[k]);
    fprintf(out, "}, \"steady\": %s", r->steady ? "true" : "false");
    rep_json_string(out, ", \"steady_why\": ", r->steady_why);
    fputs(", ", out);
    rep_json_bounds(out, r, ci->throughput_rps);
    fputc('}', out);
}

/* The engine's work for a whole report: every event of every replication (both models), the
 * wall time they took, the peak RSS. Its rate is events / wall_s: the report's rows are
 * means over replications, and a mean over the total time would fall as 1/R. */
struct rep_engine {
    double events, wall_s;
    long peak_rss;
};

/* JSON for machines. */
static void rep_json(FILE *out, const struct scenario *s, const char *path, const struct report *rp,
                     const struct rep_engine *eng)
{
    double events = eng->events, wall_s = eng->wall_s, ideal = rep_ideal_rps(s);
    long peak_rss = eng->peak_rss;
    rep_json_string(out, "{\n  \"scenario\": ", path);
    rep_json_string(out, ",\n  \"name\": ", s->name);
    fprintf(out, ",\n  \"seed\": %" PRIu64 ",\n", s->seed);
    fprintf(out, "  \"warmup_s\": %.6g, \"warmup_rule\": \"%s\",\n", (double)s->warmup / SEC,
            s->warmup_auto == 2 ? "measured"
            : s->warmup_auto    ? "default"
                                : "scenario");
    fprintf(out,
            "  \"engine\": {\"events\": %.0f, \"wall_s\": %.6f, \"events_per_s\": %.0f, "
            "\"peak_rss_bytes\": %ld},\n",
            events, wall_s, wall_s > 0 ? events / wall_s : 0, peak_rss);
    rep_json_number(out, "  \"ideal_rps\": ", "%.3f", ideal);
    if (!isfinite(ideal))
        fputs(",\n  \"ideal_rps_why_null\": \"requests take no time and users do not think\"", out);
    rep_json_string(out, ",\n  \"calibrated_keys\": ", s->calibrated);
    if (s->auth) /* the token check, charged as the program's first step (scn_auth_step) */
        fprintf(out, ",\n  \"auth\": {\"alg\": \"%s\", \"cpu_us_per_req\": %.6g}",
                auth_names[s->auth], (double)s->auth_cpu[s->auth] / US);
    fprintf(out, ",\n  \"intervals\": {\"level\": 0.95, \"method\": \"%s\", \"n\": %d},\n",
            rp->n < 2     ? "none"
            : rp->batches ? "batch_means"
                          : "replications",
            rp->n);
    for (int mk = 0; mk < MODEL_N; mk++) {
        fprintf(out, "  \"%s\": ", model_names[mk]);
        rep_json_model(out, &rp->r[mk], &rp->ci[mk]);
        fputs(mk + 1 < MODEL_N ? ",\n" : "\n", out);
    }
    fputs("}\n", out);
}

/* CSV (the report's and the sweep's): the rows' columns, each headline column followed by
 * KEY_ci95, its half-width (empty without an interval); then one model's cells. */
static void rep_csv_columns(FILE *out, int scope)
{
    for (size_t i = 0; i < REP_NROWS; i++)
        if (rep_shown(&rep_rows[i], scope))
            fprintf(out, rep_rows[i].ci ? ",%s,%s_ci95" : ",%s", rep_rows[i].key, rep_rows[i].key);
}

static void rep_csv_cells(FILE *out, const struct report *rp, int mk, int scope)
{
    for (size_t i = 0; i < REP_NROWS; i++) {
        if (!rep_shown(&rep_rows[i], scope))
            continue;
        double half = rep_get(&rp->ci[mk], &rep_rows[i]);
        fputc(',', out);
        fprintf(out, rep_row_fmt(&rep_rows[i]), rep_get(&rp->r[mk], &rep_rows[i]));
        if (rep_rows[i].ci && isfinite(half))
            fprintf(out, ",%.4g", half);
        else if (rep_rows[i].ci)
            fputc(',', out);
    }
}

/* CSV: a row per model, the rows' columns and the bounds. */
static void rep_csv(FILE *out, const struct scenario *s, const struct report *rp)
{
    fputs("model,users,rate", out);
    rep_csv_columns(out, rp->r[0].scope);
    for (int k = 0; k < BOUND_N; k++)
        fprintf(out, ",bound_%s_rps", bound_keys[k]);
    fputs(",binding,steady,intervals_n\n", out);
    for (int mk = 0; mk < MODEL_N; mk++) {
        const struct bounds *b = &rp->r[mk].bounds;
        fprintf(out, "%s,%ld,%g", model_names[mk], s->users, s->rate);
        rep_csv_cells(out, rp, mk, rp->r[0].scope);
        for (int k = 0; k < BOUND_N; k++) /* a bound that does not apply: an empty field */
            isfinite(b->rps[k]) ? fprintf(out, ",%.6g", b->rps[k]) : fputc(',', out);
        fprintf(out, ",%s,%d,%d\n", b->binding >= 0 ? bound_keys[b->binding] : "none",
                rp->r[mk].steady, rp->n);
    }
}

/* SWEEPS (--sweep): a report per point of one key's values, or of a grid of two keys'. */
#define SWEEP_MAX 64
struct sweep {
    char key[2][64];              /* the keys swept */
    int nkey, n;                  /* keys, points */
    char val[SWEEP_MAX][2][32];   /* each point's values, as --set took them */
    struct report rp[SWEEP_MAX];  /* each point's report */
    struct scenario s[SWEEP_MAX]; /* each point's scenario (its warm-up, its seed) */
};

/* A figure and its half-width as "v ± h" for the sweep table (or v without one). */
static void rep_sweep_cell(FILE *out, const struct report *rp, int mk, size_t off, int fmt, int col)
{
    char buf[80];
    double v = *(const double *)((const char *)&rp->r[mk] + off),
           h = *(const double *)((const char *)&rp->ci[mk] + off);
    int w = rep_cell(buf, sizeof buf, v, h, fmt, col);
    fprintf(out, " %*s", w, buf);
}

static void rep_sweep_text(FILE *out, const char *path, const struct sweep *sw)
{
    const struct scenario *s = &sw->s[0];
    fprintf(out, "Loom Lab sweep: %s (%s, seed %" PRIu64 ")\n", s->name, path, s->seed);
    rep_text_intervals(out, s, &sw->rp[0]);
    fprintf(out, "\n");
    for (int k = 0; k < sw->nkey; k++)
        fprintf(out, " %10s", sw->key[k]);
    fprintf(out, " %-8s %22s %22s %12s %-12s %s\n", "model", "throughput (req/s)", "p99 (ms)",
            "OS threads", "binds", "steady");
    for (int i = 0; i < sw->n; i++)
        for (int mk = 0; mk < MODEL_N; mk++) {
            const struct result *r = &sw->rp[i].r[mk];
            for (int k = 0; k < sw->nkey; k++)
                fprintf(out, " %10s", mk ? "" : sw->val[i][k]);
            fprintf(out, " %-8s", model_names[mk]);
            rep_sweep_cell(out, &sw->rp[i], mk, RR(throughput_rps), R_RATE, 22);
            rep_sweep_cell(out, &sw->rp[i], mk, RR(p99), R_MS, 22);
            fprintf(out, " %12.0f %-12s %s\n", r->peak_os_threads,
                    r->bounds.binding >= 0 ? bound_keys[r->bounds.binding] : "none",
                    r->steady ? "yes" : "no");
        }
}

/* CSV: a row per point and model, the keys' values first, then the report's columns. */
static void rep_sweep_csv(FILE *out, const struct sweep *sw)
{
    for (int k = 0; k < sw->nkey; k++)
        fprintf(out, "%s,", sw->key[k]);
    fputs("model", out);
    int scope = 0; /* the fan-out's columns when any point has them */
    for (int i = 0; i < sw->n; i++)
        scope |= sw->rp[i].r[0].scope;
    rep_csv_columns(out, scope);
    fputs(",bound_rps,binding,steady,intervals_n\n", out);
    for (int i = 0; i < sw->n; i++)
        for (int mk = 0; mk < MODEL_N; mk++) {
            const struct report *rp = &sw->rp[i];
            const struct bounds *b = &rp->r[mk].bounds;
            for (int k = 0; k < sw->nkey; k++)
                fprintf(out, "%s,", sw->val[i][k]);
            fputs(model_names[mk], out);
            rep_csv_cells(out, rp, mk, scope);
            fprintf(out, ",%.6g,%s,%d,%d\n", b->binding >= 0 ? b->rps[b->binding] : NAN,
                    b->binding >= 0 ? bound_keys[b->binding] : "none", rp->r[mk].steady, rp->n);
        }
}

/* JSON: {"scenario", "keys": [...], "points": [{"values": {KEY: VALUE}, "platform": {the
 * model object of --json}, "virtual": {...}}, ...]}. */
static void rep_sweep_json(FILE *out, const char *path, const struct sweep *sw)
{
    rep_json_string(out, "{\n  \"scenario\": ", path);
    fprintf(out, ",\n  \"seed\": %" PRIu64 ",\n  \"keys\": [", sw->s[0].seed);
    for (int k = 0; k < sw->nkey; k++)
        rep_json_string(out, k ? ", " : "", sw->key[k]);
    fputs("],\n  \"points\": [\n", out);
    for (int i = 0; i < sw->n; i++) {
        fputs("    {\"values\": {", out);
        for (int k = 0; k < sw->nkey; k++) {
            rep_json_string(out, k ? ", " : "", sw->key[k]);
            rep_json_string(out, ": ", sw->val[i][k]);
        }
        fprintf(out, "}, \"intervals_n\": %d", sw->rp[i].n);
        for (int mk = 0; mk < MODEL_N; mk++) {
            fprintf(out, ",\n     \"%s\": ", model_names[mk]);
            rep_json_model(out, &sw->rp[i].r[mk], &sw->rp[i].ci[mk]);
        }
        fputs(i + 1 < sw->n ? "},\n" : "}\n", out);
    }
    fputs("  ]\n}\n", out);
}

/* Close a report's file (stdout is only flushed) and say whether every write to it got
 * through: a full disk or /dev/full must not pass for a report written. 0, or -1 after a
 * message naming `name`. */
static int rep_close(FILE *f, const char *name)
{
    if (!ferror(f)) /* a stream that failed before keeps that write's errno to name */
        errno = 0;
    int bad = fflush(f) != 0 || ferror(f), e = errno;
    if (f != stdout && fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad)
        fprintf(stderr, "sim: cannot write %s: %s\n", name, e ? strerror(e) : "write error");
    return bad ? -1 : 0;
}

static int rep_series(const char *path, const struct model ms[MODEL_N])
{
    FILE *f = io_open_out(path);
    if (!f)
        return -1;
    fputs("model,t_s,rps,p99_ms,cpu_util,os_threads,threads_blocked,carriers_busy,vt_runnable,"
          "vt_parked,vt_pinned,queued,in_flight,ports_time_wait,ports_open,conns_busy,"
          "thread_mem_bytes,failed\n",
          f);
    for (int mk = 0; mk < MODEL_N; mk++)
        for (int i = 0; i < ms[mk].nseries; i++) {
            const struct sample *x = &ms[mk].series[i];
            fprintf(
                f,
                "%s,%.3f,%.1f,%.3f,%.4f,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%" PRId64 ",%" PRIu64 "\n",
                model_names[mk], (double)x->t / SEC, x->rps, x->p99_ms, x->cpu_util, x->os_threads,
                x->blocked, x->carriers_busy, x->vt_runnable, x->vt_parked, x->vt_pinned, x->queued,
                x->in_flight, x->ports_tw, x->ports_open, x->conns_busy, x->thread_mem, x->failed);
        }
    return rep_close(f, path);
}

/* ---- IV.2 Chrome trace ---- */

/* Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one process per model, one
 * lane per OS thread or carrier, one span per running / ready / blocked interval. */
struct trace {
    FILE *f;
    const char *path;
    uint64_t spans, max;
};

/* A model's on_span: one span of thread t in `state`. */
static void trace_span(const struct model *m, int32_t t, int state, simtime from, simtime to)
{
    struct trace *tr = m->observer;
    if (tr->spans >= tr->max)
        return;
    tr->spans++;
    fprintf(tr->f,
            ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f}",
            thr_state_names[state], m->id + 1, m->thr[t].id, (double)from / 1e3,
            (double)(to - from) / 1e3);
}

static int trace_open(struct trace *tr, const char *path)
{
    if (!(tr->f = io_open_out(path)))
        return -1;
    tr->path = path;
    tr->max = 2000000;
    fputs("[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"platform "
          "threads\"}},\n"
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,\"args\":{\"name\":\"virtual: "
          "carriers\"}}",
          tr->f);
    return 0;
}

/* 0, or -1 after a message if a write failed. */
static int trace_close(struct trace *tr)
{
    if (!tr->f)
        return 0;
    fputs("\n]\n", tr->f);
    if (tr->spans >= tr->max)
        fprintf(stderr, "sim: trace truncated at %" PRIu64 " spans\n", tr->max);
    return rep_close(tr->f, tr->path);
}

/* ---- IV.3 Validation ---- */

/* ./sim --validate results.csv: for each point the real aggregator's benchmark measured
 * (./aggregator bench), simulate the same configuration with the calibrated costs and put
 * prediction beside measurement. The scenario of a point is built from text through scn_set,
 * so it is checked like any scenario, and the calibration file and --set apply on top. */

/* A results CSV is read through res_cols (the shared block, II.3): its columns in any order
 * (more are ignored); a file without a column whose `need` is set is refused, and each value
 * read lies in its column's range. The bench also writes the load generator's warm-up and
 * measured window: the point is then simulated over the same [warmup, warmup + window],
 * transient included (with 5000 users queued for 200 threads, a 3 s window sees the first
 * queue drain, not the steady state). */

/* The metrics compared, measured vs predicted. */
enum val_metric { VM_RPS, VM_P50, VM_P99, VM_THREADS, VM_RSS, VM_N };
static const struct {
    int col;                     /* enum res_col: its column, named as --json names it */
    const char *label, *summary; /* summary: its name in --json's summary keys */
    size_t off;
} val_metrics[VM_N] = {
    {RES_THROUGHPUT, "req/s", "throughput", RR(throughput_rps)},
    {RES_P50, "p50 ms", "p50", RR(p50)},
    {RES_P99, "p99 ms", "p99", RR(p99)},
    {RES_THREADS, "threads", "threads", RR(peak_os_threads)},
    {RES_RSS, "RSS MiB", "rss", RR(peak_rss)},
};

/* steal_pct: the share of the cores' time the hypervisor took during the window. It is
 * printed beside the errors: on a VM, a point with much steal is a disturbed measurement. */
enum { VC_WARMUP, VC_WINDOW, VC_STEAL, VC_RAMPUP, VC_OPTIONAL_N };
static const struct {
    int col;    /* enum res_col */
    double def; /* when absent: s, s (a steady state); -1 = unknown; s (users started together) */
} val_conditions[VC_OPTIONAL_N] = {
    {RES_WARMUP, 5}, {RES_WINDOW, 15}, {RES_STEAL, -1}, {RES_RAMPUP, 0}};

/* The server a row measured (its `server` column; a CSV without one is the C aggregator's):
 * one validation compares one server. For the JVM two figures have no model: its RSS
 * (G1 sizes the heap by its own rules, not by the requests in flight) and the p99 tail
 * (GC pauses); they are printed measured only, and left out of the summaries. */
enum val_server { VS_C, VS_JAVA, VS_N };
static const char *const val_server_names[VS_N] = {"c", "java"};

/* The server of that name (enum val_server), -1 if none. */
static int val_server_named(const char *name)
{
    for (int k = 0; k < VS_N; k++)
        if (!strcmp(name, val_server_names[k]))
            return k;
    return -1;
}
#define VAL_JAVA_UNMODELLED                                                                        \
    "the JVM's RSS (G1 sizes the heap by its own rules) and its p99 tail (GC pauses) are not "     \
    "modelled"

/* The bench's spread over runs, its failures and the network of the cell (the extra
 * columns: runs, the interval, failures, ports, close_first), each column optional: NAN
 * where absent (or -1, the bench's word for unknown). Rows measured in a private network
 * namespace are predicted with its port range and tcp_tw_reuse. */
enum {
    VX_RUNS,
    VX_CI_LOW,
    VX_CI_HIGH,
    VX_MIN,
    VX_MAX,
    VX_PORT_LOW,
    VX_PORT_HIGH,
    VX_TW_REUSE,
    VX_FAILED,
    VX_FAILED_NO_PORT,
    VX_N
};
static const int val_extra_cols[VX_N] = {RES_RUNS,   RES_CI_LOW,        RES_CI_HIGH,   RES_MIN,
                                         RES_MAX,    RES_PORT_LOW,      RES_PORT_HIGH, RES_TW_REUSE,
                                         RES_FAILED, RES_FAILED_NO_PORT}; /* enum res_col */

/* A parallel fan-out under failures (bench --on-failure, its backend's --fail-share and
 * --fail-after-ms): the row's share and time of failing calls, then what is measured of it
 * (the failed requests' p50 and p99, calls begun and connection time per request). */
enum { VF_SHARE, VF_AFTER_MS, VF_FAILED_P50, VF_FAILED_P99, VF_CALLS, VF_CALL_MS, VF_N };
static const int val_fan_cols[VF_N] = {RES_FAIL_SHARE, RES_FAIL_AFTER_MS, RES_FAILED_P50,
                                       RES_FAILED_P99, RES_CALLS,         RES_CALL_MS};
#define VF_MEASURED VF_FAILED_P50 /* the first measured figure: the rest are conditions */

/* What a prediction says beyond the metrics: the failures over the window, and the bound. */
struct val_prediction {
    double fail_frac, no_port_frac; /* failed (no_port) / (completed + failed) in the window */
    int binding;                    /* the bound that binds (enum, BOUND_*), -1 if none */
    double bound_rps;
    char bound_what[128];
};

struct val_point {
    int line;   /* in the results CSV, for messages */
    int server; /* enum val_server */
    long users;
    int fanout, pooled, mode;
    int close_first; /* enum net_closer, -1 unknown or pooled */
    double delay_ms;
    double conditions[VC_OPTIONAL_N]; /* warm-up and window in s, steal in %, ramp-up in s */
    double extra[VX_N];               /* NAN where the CSV has no such column */
    double measured[VM_N], predicted[VM_N];
    struct val_prediction pred;
    int rep;          /* the replication predicted: its seed is rep_seed(seed, rep) (0: the seed) */
    int parallel;     /* 1: its calls ran in parallel, a scope (par(...)); 0: in turn */
    int on_failure;   /* then its policy (enum on_failure) */
    double fan[VF_N]; /* the fan-out's columns, NAN where absent (val_fan_cols) */
    double fan_pred[VF_N]; /* their prediction (the measured figures' only) */
    int auth;              /* enum auth_alg: the bearer token its server checked (bench --auth) */
    double server_p99;     /* the server's own p99, ms (bench's server_p99_ms): NAN if absent */
};

/* Split a CSV line in place into at most `max` fields; returns the count. No quoting: the
 * bench writes plain numbers and words. */
static int val_split(char *line, char **field, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = 0;
    for (char *p = line; n < max;) {
        field[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            break;
        *comma = 0;
        p = comma + 1;
    }
    return n;
}

static int val_number(const char *text, double *out)
{
    char *end;
    errno = 0;
    *out = scn_strtod(text, &end);
    return end != text && !*scn_skip_space(end) && !errno && isfinite(*out) ? 0 : -1;
}

/* The cell's network, when the CSV gives it, over the calibration's (it may be another
 * namespace's): its port range, tcp_tw_reuse (2, Linux's loopback-only default, is 1 here: every
 * call is on loopback) and who closes first. */
static int val_net_keys(struct scenario *s, const struct val_point *pt, const struct scn_src *src)
{
    char v[32];
    static const int cols[] = {VX_PORT_LOW, VX_PORT_HIGH, VX_TW_REUSE};
    static const char *const keys[] = {"net.port_low", "net.port_high", "net.tw_reuse"};
    for (int k = 0; k < 3; k++) {
        double x = pt->extra[cols[k]];
        if (isnan(x))
            continue;
        snprintf(v, sizeof v, "%d", cols[k] == VX_TW_REUSE ? x > 0 : (int)x);
        if (scn_set(s, keys[k], v, src) < 0)
            return -1;
    }
    if (pt->close_first >= 0 &&
        scn_set(s, "net.close_first", net_closer_names[pt->close_first], src) < 0)
        return -1;
    /* The bench's users send again at once after a failed request; 1 ms stands for the round
     * trip of a failure where no CPU is calibrated, and keeps the events of a wall bounded. */
    return scn_set(s, "retry_after", "1ms", src);
}

/* A parallel fan-out's policy (the share of calls that fail is val_scenario's: the failing
 * backend's keys). */
static int val_fan_keys(struct scenario *s, const struct val_point *pt, const struct scn_src *src)
{
    if (pt->parallel && scn_set(s, "on_failure", on_failure_names[pt->on_failure], src) < 0)
        return -1;
    return 0;
}

/* The window's failure fractions and the binding bound, from one simulated run. */
static void val_predict_failures(struct val_point *pt, const struct result *r, double done,
                                 double failed, double no_port)
{
    const struct bounds *b = &r->bounds;
    pt->pred.fail_frac = done + failed > 0 ? failed / (done + failed) : 0;
    pt->pred.no_port_frac = done + failed > 0 ? no_port / (done + failed) : 0;
    pt->pred.binding = b->binding;
    pt->pred.bound_rps = b->binding >= 0 ? b->rps[b->binding] : NAN;
    snprintf(pt->pred.bound_what, sizeof pt->pred.bound_what, "%s",
             b->binding >= 0 ? b->what[b->binding] : "no bound applies");
}

/* A calibration holds measured costs; the workload is each point's, from its row. A key of
 * kv[] that the calibration in *s set would rewrite every point silently (users = 1 made a
 * 1000-user row predict 6.7 req/s): an error at the calibration's line. Returns 0 or -1. */
static int val_calibration_owns(const struct scenario *s, const char *const (*kv)[2], size_t n,
                                char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        char key[64];
        const char *at = NULL;
        snprintf(key, sizeof key, "%s", kv[i][0]);
        if (!strncmp(key, "service.", 8)) { /* service.NAME.KEY: did it name the service? */
            *strchr(key + 8, '.') = 0;
            for (int k = 0; k < s->nsvc && !at; k++)
                if (!strcmp(key + 8, s->svc[k].name))
                    at = s->svc[k].key_at;
            strcat(key, ".*");
        } else {
            at = s->key_at[scn_key_index(key)];
        }
        if (at && at[0]) {
            struct scn_src src = {at, 0, err, errlen};
            return scn_fail(&src,
                            "%s is set by each --validate point from its row; a calibration "
                            "holds measured costs only",
                            key);
        }
    }
    return 0;
}

/* Does the row's first call go to bench's failing backend (--fail-share: a second backend
 * that answers a share of its calls 500, the first call's; the other K - 1 are healthy)? */
static int val_failing(const struct val_point *pt)
{
    return pt->fan[VF_SHARE] > 0;
}

/* The program of a point: K calls to the backend one after another, or, when the row names
 * an on_failure policy, in parallel: par(backend, ..., backend), K <= MAX_PAR (val_fan). With
 * a failing backend the first call is to it: call(failing) call(backend)*(K-1), par(failing,
 * backend, ...). */
static void val_program(char *buf, size_t len, const struct val_point *pt)
{
    const char *first = val_failing(pt) ? "failing" : "backend";
    if (!pt->parallel) {
        if (!val_failing(pt) || pt->fanout == 1)
            snprintf(buf, len, "call(%s)*%d", first, pt->fanout); /* fanout <= MAX_STEPS */
        else
            snprintf(buf, len, "call(failing) call(backend)*%d", pt->fanout - 1);
        return;
    }
    size_t o = (size_t)snprintf(buf, len, "par(%s", first);
    for (int k = 1; k < pt->fanout && o < len; k++)
        o += (size_t)snprintf(buf + o, len - o, ", backend");
    if (o < len)
        snprintf(buf + o, len - o, ")");
}

/* The scenario of one point: the aggregator with K calls of D ms to one backend, think 0.
 * Errors are named by the point's line in `path`. */
static int val_scenario(struct scenario *sp, const struct val_point *pt, const char *path,
                        const char *calibration, const char *const *sets, int nsets, char *err,
                        size_t errlen)
{
    char program[16 * MAX_PAR], value[64], latency[64], where[256];
    struct scn_src src = {path, pt->line, err, errlen};
    snprintf(where, sizeof where, "%s:%d", path, pt->line);
    scn_defaults(sp);
    if (calibration &&
        scn_load_keys(sp, calibration, sp->calibrated, sizeof sp->calibrated, err, errlen) < 0)
        return -1;
    val_program(program, sizeof program, pt);
    snprintf(value, sizeof value, "%ld", pt->users);
    snprintf(latency, sizeof latency, "%.6gms", pt->delay_ms);
    char duration[32], warmup[32], rampup[32], share[32], after[32];
    snprintf(share, sizeof share, "%.9g", pt->fan[VF_SHARE]);
    snprintf(after, sizeof after, "%.9gms", isnan(pt->fan[VF_AFTER_MS]) ? 0 : pt->fan[VF_AFTER_MS]);
    snprintf(duration, sizeof duration, "%.6gs",
             pt->conditions[VC_WARMUP] + pt->conditions[VC_WINDOW]);
    snprintf(warmup, sizeof warmup, "%.6gs", pt->conditions[VC_WARMUP]);
    snprintf(rampup, sizeof rampup, "%.6gs", pt->conditions[VC_RAMPUP]);
    const char *kv[][2] = {{"users", value},
                           {"think", "0"},
                           {"duration", duration},
                           {"warmup", warmup},
                           {"rampup", rampup},
                           {"program", program},
                           {"service.backend.pool", pt->pooled ? "100000" : "0"},
                           {"service.backend.latency", pt->delay_ms > 0 ? latency : "0"},
                           {"auth", auth_names[pt->auth]},
                           /* the failing backend, last: left out where the row has none */
                           {"service.failing.pool", pt->pooled ? "100000" : "0"},
                           {"service.failing.latency", pt->delay_ms > 0 ? latency : "0"},
                           {"service.failing.fail_share", share},
                           {"service.failing.fail_after", after}};
    size_t nkv = sizeof kv / sizeof kv[0] - (val_failing(pt) ? 0 : 4);
    if (val_calibration_owns(sp, kv, nkv, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < nkv; i++)
        if (scn_set(sp, kv[i][0], kv[i][1], &src) < 0)
            return -1;
    if (val_net_keys(sp, pt, &src) < 0 || val_fan_keys(sp, pt, &src) < 0)
        return -1;
    for (int i = 0; i < nsets; i++) {
        char buf[1024], *key, *val;
        snprintf(buf, sizeof buf, "%s", sets[i]);
        if (scn_split(buf, &key, &val) < 0 || scn_set(sp, key, val, &src) < 0)
            return scn_fail(&src, "bad --set %s", sets[i]);
    }
    if (scn_finish(sp, where, err, errlen) < 0)
        return -1;
    sp->seed = rep_seed(sp->seed, pt->rep);
    return 0;
}

/* Rows that checked a token, predicted without a cost measured for the check: said once per
 * algorithm, on stderr (the key's default is a typical figure, not this machine's). */
static void val_auth_note(const struct val_point *p, int n, const char *path,
                          const char *calibration, const char *const *sets, int nsets)
{
    int said[AUTH_N] = {0};
    for (int i = 0; i < n; i++) {
        struct scenario s;
        char err[512], key[32];
        if (p[i].auth == AUTH_OFF || said[p[i].auth]++)
            continue;
        snprintf(key, sizeof key, "auth.%s_cpu", auth_names[p[i].auth]);
        size_t k = scn_key_index(key);
        if (val_scenario(&s, &p[i], path, calibration, sets, nsets, err, sizeof err) == 0 &&
            !s.key_at[k][0])
            fprintf(stderr,
                    "sim: %s: rows checked %s tokens, and neither the calibration nor --set "
                    "gives %s: predicted with its default, %s\n",
                    path, auth_names[p[i].auth], key, scn_keys[k].def);
    }
}

static double wall_now(void);

/* A row taking longer than this (s of wall time) says how far it has come, this often. */
#define VAL_SLOW_S 5.0

/* A progress line, on stderr, about the row at `where`. */
struct val_progress {
    const char *where;
    double t0, said, every; /* wall times: the row's start, the last line; s between lines */
};

/* model_run to `until` in slices of a hundredth of the run (the same events: model_run
 * stops between two instants), a line every p->every s of wall time: a row of a million
 * users, whose requests without a port are sent again every millisecond, takes minutes, and
 * says so instead of running silently. */
static void val_run(struct model *m, simtime until, struct val_progress *p)
{
    simtime step = m->s->duration / 100 > 0 ? m->s->duration / 100 : 1;
    for (simtime to = m->now; to < until && !m->stuck;) {
        to = until - to > step ? to + step : until;
        model_run(m, to);
        double now = wall_now();
        if (now - p->said >= p->every) {
            fprintf(stderr, "sim: %s: %.2f s of %.2f s simulated, %.0f s elapsed\n", p->where,
                    (double)m->now / SEC, (double)m->s->duration / SEC, now - p->t0);
            p->said = now;
        }
    }
}

static int val_simulate(struct val_point *pt, const char *path, const char *calibration,
                        const char *const *sets, int nsets, char *err, size_t errlen)
{
    struct scenario s;
    if (val_scenario(&s, pt, path, calibration, sets, nsets, err, errlen) < 0)
        return -1;
    struct model m;
    struct result r;
    char where[300];
    snprintf(where, sizeof where, "%s:%d (%ld users, %s)", path, pt->line, pt->users,
             model_names[pt->mode]);
    struct val_progress prog = {where, wall_now(), wall_now(), VAL_SLOW_S};
    model_init(&m, &s, pt->mode);
    val_run(&m, s.warmup, &prog);
    uint64_t done = m.stats.completed, failed = 0, no_port = m.stats.failed[FAIL_NO_PORT];
    for (int k = 0; k < FAIL_N; k++)
        failed += m.stats.failed[k];
    val_run(&m, s.duration, &prog);
    rep_result(&m, &r);
    model_free(&m);
    for (int k = 0; k < VM_N; k++)
        pt->predicted[k] = *(const double *)((const char *)&r + val_metrics[k].off);
    const double fan[] = {r.failed_p50, r.failed_p99, r.calls_per_req, r.call_ms_per_req};
    for (int k = VF_MEASURED; k < VF_N; k++)
        pt->fan_pred[k] = fan[k - VF_MEASURED];
    val_predict_failures(pt, &r, (double)(r.completed - (double)done), r.failed - (double)failed,
                         r.failed_by_reason[FAIL_NO_PORT] - (double)no_port);
    return 0;
}

/* A results CSV: a header, then a line per point. Its bounds are the scenario reader's
 * (III.3), larger: 100,000 points of a few hundred bytes. */
#define VAL_MAX_LINE   2048
#define VAL_MAX_FILE   (64 << 20)
#define VAL_MAX_FIELDS 64

/* Where each column of res_cols is in the header, -1 where absent. */
struct val_columns {
    int n; /* fields in the header: every row has as many */
    int at[RES_N];
};

/* Where the prediction's binding bound is the CPU, the p99 is left unmodelled on any server:
 * measured there, it is several times the model's (whose cores serve in turn, so its p99
 * stays near its p50). bench's server_p99_ms measures the tail apart: most of it is the
 * aggregator's own (its run queues and epoll batches, on cores it shares with the load
 * generator and the backend), the rest the load generator's wait for a core. */
#define VAL_CPU_TAIL_UNMODELLED                                                                    \
    "the p99 where the CPU binds (mostly the aggregator's own run queues and epoll batches, "      \
    "the rest the load generator's wait for a core; bench's server_p99_ms splits them) is not "    \
    "modelled"

/* Is this metric of this point left unmodelled (no prediction, no error)? */
static int val_unmodelled(const struct val_point *p, int metric)
{
    return (p->server == VS_JAVA && (metric == VM_P99 || metric == VM_RSS)) ||
           (metric == VM_P99 && p->pred.binding == BOUND_CPU);
}

static int val_column(char **field, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(field[i], name))
            return i;
    return -1;
}

/* Where each of a table's columns is in a header (at[k], -1 where absent); -1 after a
 * message naming the first column the table needs and the header lacks (in `what`). */
static int val_find_columns(char **field, int n, const struct csv_col *cols, int ncols, int *at,
                            const char *what, const struct scn_src *src)
{
    for (int k = 0; k < ncols; k++)
        if ((at[k] = val_column(field, n, cols[k].name)) < 0 && cols[k].need)
            return scn_fail(src, "no column '%s' in %s", cols[k].name, what);
    return 0;
}

/* A value of a column: a number in the column's [lo, hi] (whole in a CSV_WHOLE column), or
 * -1 in a column that may be unknown (*out is then NAN). 0, or -1: the caller says why. */
static int val_value(const struct csv_col *col, const char *v, double *out)
{
    if (val_number(v, out) < 0)
        return -1;
    if (col->unknown && *out == -1) {
        *out = NAN;
        return 0;
    }
    return *out >= col->lo && *out <= col->hi && (col->type != CSV_WHOLE || *out == floor(*out))
               ? 0
               : -1;
}

static int val_header(char **field, int n, struct val_columns *c, const struct scn_src *src)
{
    c->n = n;
    return val_find_columns(field, n, res_cols, RES_N, c->at, "the header", src);
}

/* The field of column k (enum res_col) in a row, `absent` where the CSV has no such column. */
static const char *val_field(char **field, const struct val_columns *c, int k, const char *absent)
{
    return c->at[k] >= 0 ? field[c->at[k]] : absent;
}

/* The extra columns of a row: numbers (`-` is absent, -1 unknown where the column says so),
 * close_first a word. */
static int val_extra(char **field, const struct val_columns *c, struct val_point *pt,
                     const struct scn_src *src)
{
    for (int k = 0; k < VX_N; k++) {
        const struct csv_col *col = &res_cols[val_extra_cols[k]];
        const char *v = val_field(field, c, val_extra_cols[k], "-");
        pt->extra[k] = NAN;
        if (strcmp(v, "-") && val_value(col, v, &pt->extra[k]) < 0)
            return scn_fail(src, "%s: '%s' is not a number from %g to %g%s", col->name, v, col->lo,
                            col->hi, col->unknown ? " (or -1, unknown)" : "");
    }
    /* what a bench writes is ordered: an interval's low end, the runs' least, the failed
     * calls that found no port are at most the high end, the greatest, the calls failed */
    static const int ordered[][2] = {
        {VX_CI_LOW, VX_CI_HIGH}, {VX_MIN, VX_MAX}, {VX_FAILED_NO_PORT, VX_FAILED}};
    for (size_t k = 0; k < sizeof ordered / sizeof ordered[0]; k++)
        if (pt->extra[ordered[k][0]] > pt->extra[ordered[k][1]])
            return scn_fail(src, "%s %g is above %s %g",
                            res_cols[val_extra_cols[ordered[k][0]]].name, pt->extra[ordered[k][0]],
                            res_cols[val_extra_cols[ordered[k][1]]].name, pt->extra[ordered[k][1]]);
    if (pt->extra[VX_PORT_LOW] > pt->extra[VX_PORT_HIGH] ||
        isnan(pt->extra[VX_PORT_LOW]) != isnan(pt->extra[VX_PORT_HIGH]))
        return scn_fail(src, "port_low %g and port_high %g are not a range of ports",
                        pt->extra[VX_PORT_LOW], pt->extra[VX_PORT_HIGH]);
    const char *closer = val_field(field, c, RES_CLOSE_FIRST, "-");
    pt->close_first = -1;
    for (int k = 0; k < CLOSE_N; k++)
        pt->close_first = !strcmp(closer, net_closer_names[k]) ? k : pt->close_first;
    if (pt->close_first < 0 && strcmp(closer, "-"))
        return scn_fail(src, "close_first '%s' is not client, server or -", closer);
    return 0;
}

/* users, fanout and delay_ms: what the point's scenario is built from. */
static int val_shape(char **field, const struct val_columns *c, struct val_point *pt,
                     const struct scn_src *src)
{
    double users, fanout;
    const char *u = field[c->at[RES_USERS]], *f = field[c->at[RES_FANOUT]],
               *d = field[c->at[RES_DELAY_MS]];
    const struct csv_col *cu = &res_cols[RES_USERS], *cf = &res_cols[RES_FANOUT],
                         *cd = &res_cols[RES_DELAY_MS];
    if (val_value(cu, u, &users) < 0)
        return scn_fail(src, "users '%s' is not a whole number from %.0f to %.0f", u, cu->lo,
                        cu->hi);
    if (val_value(cf, f, &fanout) < 0)
        return scn_fail(src, "fanout '%s' is not a whole number from %.0f to %.0f", f, cf->lo,
                        cf->hi);
    if (fanout > MAX_STEPS) /* the program is call(backend)*fanout: a step per call */
        return scn_fail(src, "fanout %s: the simulator runs at most %d calls per request", f,
                        MAX_STEPS);
    if (val_value(cd, d, &pt->delay_ms) < 0)
        return scn_fail(src, "delay_ms '%s' is not a number from %.0f to %.0f", d, cd->lo, cd->hi);
    pt->users = (long)users;
    pt->fanout = (int)fanout;
    return 0;
}

/* The measured metrics and the conditions (warm-up, window, steal, ramp-up) of a row. */
static int val_measured(char **field, const struct val_columns *c, struct val_point *pt,
                        const struct scn_src *src)
{
    for (int k = 0; k < VM_N; k++) {
        const struct csv_col *col = &res_cols[val_metrics[k].col];
        const char *v = field[c->at[val_metrics[k].col]];
        if (val_value(col, v, &pt->measured[k]) < 0)
            return scn_fail(src, "%s: '%s' is not a number from %g to %g", col->name, v, col->lo,
                            col->hi);
    }
    for (int k = 0; k < VC_OPTIONAL_N; k++) {
        const struct csv_col *col = &res_cols[val_conditions[k].col];
        const char *v = val_field(field, c, val_conditions[k].col, NULL);
        pt->conditions[k] = val_conditions[k].def;
        if (v && val_value(col, v, &pt->conditions[k]) < 0)
            return scn_fail(src, "%s: '%s' is not a number from %g to %g", col->name, v, col->lo,
                            col->hi);
        if (isnan(pt->conditions[k])) /* unknown: as absent */
            pt->conditions[k] = val_conditions[k].def;
    }
    const struct csv_col *sc = &res_cols[RES_SERVER_P99];
    const char *sv = val_field(field, c, RES_SERVER_P99, "-");
    pt->server_p99 = NAN;
    if (strcmp(sv, "-") && val_value(sc, sv, &pt->server_p99) < 0)
        return scn_fail(src, "%s: '%s' is not a number from %g to %g (or -1, unknown)", sc->name,
                        sv, sc->lo, sc->hi);
    return 0;
}

/* The fan-out's columns of a row (`-` or absent: NAN; -1 unknown where the column says so):
 * with an on_failure word the row's calls ran in parallel, a scope of K (par(...)). */
static int val_fan(char **field, const struct val_columns *c, struct val_point *pt,
                   const struct scn_src *src)
{
    const char *policy = val_field(field, c, RES_ON_FAILURE, "-");
    for (int k = 0; on_failure_names[k]; k++)
        if (!strcmp(policy, on_failure_names[k]))
            pt->parallel = 1, pt->on_failure = k;
    if (!pt->parallel && strcmp(policy, "-"))
        return scn_fail(src, "on_failure '%s' is not cancel, wait or -", policy);
    if (pt->parallel && pt->fanout > MAX_PAR)
        return scn_fail(src, "fanout %d: the simulator's par(...) runs at most %d calls",
                        pt->fanout, MAX_PAR);
    for (int k = 0; k < VF_N; k++) {
        const struct csv_col *col = &res_cols[val_fan_cols[k]];
        const char *v = val_field(field, c, val_fan_cols[k], "-");
        pt->fan[k] = pt->fan_pred[k] = NAN;
        if (strcmp(v, "-") && val_value(col, v, &pt->fan[k]) < 0)
            return scn_fail(src, "%s: '%s' is not a number from %g to %g%s", col->name, v, col->lo,
                            col->hi, col->unknown ? " (or -1, unknown)" : "");
    }
    if (pt->fan[VF_FAILED_P50] > pt->fan[VF_FAILED_P99])
        return scn_fail(src, "failed_p50_ms %g is above failed_p99_ms %g", pt->fan[VF_FAILED_P50],
                        pt->fan[VF_FAILED_P99]);
    return 0;
}

/* The row's bearer token (its `auth` column; a CSV without one measured none): the point is
 * predicted with the calibration's CPU for that check (auth.ALG_cpu), first in every request. */
static int val_auth(char **field, const struct val_columns *c, struct val_point *pt,
                    const struct scn_src *src)
{
    const char *alg = val_field(field, c, RES_AUTH, "off");
    for (pt->auth = 0; auth_names[pt->auth] && strcmp(alg, auth_names[pt->auth]); pt->auth++)
        ;
    if (!auth_names[pt->auth])
        return scn_fail(src, "auth '%s' is not off, hs256 or rs256", alg);
    return 0;
}

/* One data row into *pt, every field checked; -1 after a message naming the line. */
static int val_row(char **field, int n, const struct val_columns *c, struct val_point *pt,
                   const struct scn_src *src)
{
    if (n != c->n)
        return scn_fail(src, "%d fields, the header has %d", n, c->n);
    const char *mode = field[c->at[RES_MODE]], *pool = field[c->at[RES_POOL]];
    *pt = (struct val_point){.line = src->line};
    pt->mode = model_named(mode);
    pt->pooled = !strcmp(pool, "on") || !strcmp(pool, "1")    ? 1
                 : !strcmp(pool, "off") || !strcmp(pool, "0") ? 0
                                                              : -1;
    if (pt->mode < 0)
        return scn_fail(src, "mode '%s' is not platform or virtual", mode);
    const char *server = val_field(field, c, RES_SERVER, "c");
    pt->server = val_server_named(server);
    if (pt->server < 0)
        return scn_fail(src, "server '%s' is not c or java", server);
    if (pt->pooled < 0)
        return scn_fail(src, "pool '%s' is not on or off", pool);
    if (val_shape(field, c, pt, src) < 0 || val_extra(field, c, pt, src) < 0 ||
        val_fan(field, c, pt, src) < 0 || val_auth(field, c, pt, src) < 0)
        return -1;
    return val_measured(field, c, pt, src);
}

/* The rows of one server: `server` (enum val_server) keeps those and skips the others; -1
 * wants every row to be of the same server. Returns 0, or -1 after a message. */
static int val_keep(const struct val_point *pt, int server, int *first_server, int *first_line,
                    int *keep, const struct scn_src *src)
{
    *keep = server < 0 || pt->server == server;
    if (server >= 0)
        return 0;
    if (*first_server < 0) {
        *first_server = pt->server;
        *first_line = pt->line;
    } else if (pt->server != *first_server)
        return scn_fail(src,
                        "server '%s', where line %d has '%s': the CSV mixes servers; choose one "
                        "with --server c or --server java",
                        val_server_names[pt->server], *first_line, val_server_names[*first_server]);
    return 0;
}

/* Read the points of a results CSV from `f` (named `name` in messages) into a malloc'd
 * array, the rows of `server` as val_keep says; 0, or -1 after a message (then *points is
 * NULL). */
static int val_read_rows(FILE *f, const char *name, int server, struct val_point **points,
                         int *npoints, char *err, size_t errlen)
{
    struct scn_text text = {f, {name, 0, err, errlen}, 0, VAL_MAX_FILE};
    struct val_columns cols = {0};
    char line[VAL_MAX_LINE], *field[VAL_MAX_FIELDS];
    int cap = 0, rc, first_server = -1, first_line = 0, keep;
    *points = NULL;
    *npoints = 0;
    while ((rc = scn_getline(&text, line, sizeof line)) > 0) {
        int n = val_split(line, field, VAL_MAX_FIELDS);
        if (text.src.line == 1) { /* the header names the columns */
            if ((rc = val_header(field, n, &cols, &text.src)) < 0)
                break;
            continue;
        }
        if (n == 1 && !*field[0])
            continue;
        if (*npoints == cap)
            *points = xrealloc(*points, (size_t)(cap = cap ? 2 * cap : 16), sizeof **points);
        if ((rc = val_row(field, n, &cols, &(*points)[*npoints], &text.src)) < 0 ||
            (rc = val_keep(&(*points)[*npoints], server, &first_server, &first_line, &keep,
                           &text.src)) < 0)
            break;
        *npoints += keep;
    }
    if (rc == 0 && *npoints == 0)
        rc = server < 0
                 ? scn_fail(&text.src, "no data rows")
                 : scn_fail(&text.src, "no data rows of server '%s'", val_server_names[server]);
    if (rc < 0) {
        free(*points);
        *points = NULL;
        *npoints = 0;
    }
    return rc;
}

/* Every row, all of one server. */
static int val_read_file(FILE *f, const char *name, struct val_point **points, int *npoints,
                         char *err, size_t errlen)
{
    return val_read_rows(f, name, -1, points, npoints, err, errlen);
}

/* The rows of `server` (enum val_server), or with -1 every row, all of one server. */
static int val_read_server(const char *path, int server, struct val_point **points, int *npoints,
                           char *err, size_t errlen)
{
    *points = NULL;
    *npoints = 0;
    FILE *f = io_open_in(path, err, errlen);
    if (!f)
        return -1;
    int rc = server < 0 ? val_read_file(f, path, points, npoints, err, errlen)
                        : val_read_rows(f, path, server, points, npoints, err, errlen);
    fclose(f);
    return rc;
}

static double val_rel(double measured, double predicted)
{
    return measured > 0 ? (predicted - measured) / measured : predicted > 0 ? 1 : 0;
}

static int val_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A point is calm when the hypervisor took at most this share of the cores while it was
 * measured (as the bench's retry rule, BENCH_STEAL_RETRY_PCT in aggregator.c). */
#define VAL_CALM_STEAL_PCT 5.0

static int val_calm(const struct val_point *p)
{
    return p->conditions[VC_STEAL] <= VAL_CALM_STEAL_PCT;
}

/* Median and maximum of |relative error| of one metric over all points, or (calm_only)
 * over the calm ones; returns how many points that was. */
static int val_summary(const struct val_point *p, int n, int metric, int calm_only, double *median,
                       double *max)
{
    double *e = xrealloc(NULL, (size_t)n, sizeof *e);
    int m = 0;
    for (int i = 0; i < n; i++)
        if ((!calm_only || val_calm(&p[i])) && !val_unmodelled(&p[i], metric))
            e[m++] = fabs(val_rel(p[i].measured[metric], p[i].predicted[metric]));
    qsort(e, (size_t)m, sizeof *e, val_cmp_double);
    *median = m == 0 ? 0 : m % 2 ? e[m / 2] : (e[m / 2 - 1] + e[m / 2]) / 2;
    *max = m ? e[m - 1] : 0;
    free(e);
    return m;
}

/* Are there points measured under steal? Then the calm points get their own summary. */
static int val_disturbed(const struct val_point *p, int n)
{
    for (int i = 0; i < n; i++)
        if (!val_calm(&p[i]))
            return 1;
    return 0;
}

/* The cpu: line, where a row's bound is the CPU: its p99 is not modelled (VAL_CPU_TAIL_UNMODELLED),
 * and where the CSV has the server's own p99, how much of the client's it is. */
static void val_print_cpu_tail(FILE *out, const struct val_point *p, int n)
{
    int cpu = 0, split = 0;
    for (int i = 0; i < n; i++)
        cpu |= p[i].pred.binding == BOUND_CPU;
    if (!cpu)
        return;
    fprintf(out, "cpu: %s: measured only there", VAL_CPU_TAIL_UNMODELLED);
    for (int i = 0; i < n; i++)
        if (p[i].pred.binding == BOUND_CPU && !isnan(p[i].server_p99))
            fprintf(out, "%s %ld %s %.1f of %.1f ms",
                    split++ ? "," : "; the server's own p99 (server_p99_ms) of the client's:",
                    p[i].users, model_names[p[i].mode], p[i].server_p99, p[i].measured[VM_P99]);
    fputc('\n', out);
}

/* ---- The bench's spread, failures and network beside the prediction ---- */

/* Does the CSV carry any of the extra columns? Only then are these lines printed (older CSVs keep
 * their report as it was). */
static int val_has_extra(const struct val_point *p, int n)
{
    for (int i = 0; i < n; i++) {
        if (p[i].close_first >= 0)
            return 1;
        for (int k = 0; k < VX_N; k++)
            if (!isnan(p[i].extra[k]))
                return 1;
    }
    return 0;
}

/* The measured mean's 95% interval, when it is one (2 runs or more, both ends given). */
static int val_has_ci(const struct val_point *p)
{
    return p->extra[VX_RUNS] >= 2 && !isnan(p->extra[VX_CI_LOW]) && !isnan(p->extra[VX_CI_HIGH]);
}

/* The measured failure fraction: failed / (failed + served), served = mean rate x window. */
static double val_fail_frac(const struct val_point *p, int k)
{
    double failed = p->extra[k], served = p->measured[VM_RPS] * p->conditions[VC_WINDOW];
    return failed + served > 0 ? failed / (failed + served) : NAN;
}

/* The standard error of a mean from its Student-t 95% interval over `runs` runs. */
static double val_se(const struct val_point *p)
{
    return (p->extra[VX_CI_HIGH] - p->extra[VX_CI_LOW]) / 2 / stat_t975((int)p->extra[VX_RUNS] - 1);
}

/* The ratio v / pl of two measured means and its 95% interval by the delta method on the log
 * ratio: Var(ln v - ln pl) = (se_v / v)^2 + (se_pl / pl)^2, with the Welch-Satterthwaite
 * degrees of freedom for the t quantile. lo = hi = NAN when either mean has no interval. */
static double val_ratio(const struct val_point *v, const struct val_point *pl, double *lo,
                        double *hi)
{
    double x = v->measured[VM_RPS], y = pl->measured[VM_RPS], r = y > 0 ? x / y : NAN;
    *lo = *hi = NAN;
    if (!val_has_ci(v) || !val_has_ci(pl) || !(x > 0) || !(y > 0))
        return r;
    double a = val_se(v) / x, b = val_se(pl) / y, var = a * a + b * b;
    if (var <= 0) {
        *lo = *hi = r;
        return r;
    }
    double df =
        var * var / (pow(a, 4) / (v->extra[VX_RUNS] - 1) + pow(b, 4) / (pl->extra[VX_RUNS] - 1));
    double t = stat_t975((int)floor(df)), half = t * sqrt(var);
    *lo = r * exp(-half);
    *hi = r * exp(half);
    return r;
}

/* The same configuration (pool, closer, K, D, auth), whatever the mode. */
static int val_same_num(double x, double y)
{
    return x == y || (isnan(x) && isnan(y));
}

static int val_same_config(const struct val_point *a, const struct val_point *b)
{
    return a->pooled == b->pooled && a->close_first == b->close_first && a->fanout == b->fanout &&
           a->delay_ms == b->delay_ms && a->auth == b->auth && a->parallel == b->parallel &&
           (!a->parallel || a->on_failure == b->on_failure) &&
           val_same_num(a->fan[VF_SHARE], b->fan[VF_SHARE]) &&
           val_same_num(a->fan[VF_AFTER_MS], b->fan[VF_AFTER_MS]);
}

/* Does a row check a bearer token? Only then do the tables have an auth column (a CSV
 * without, or with auth off throughout, keeps its report as it was). */
static int val_has_auth(const struct val_point *p, int n)
{
    for (int i = 0; i < n; i++)
        if (p[i].auth != AUTH_OFF)
            return 1;
    return 0;
}

/* The auth column of a table, when val_has_auth: its header (p NULL) or the row's word. */
static void val_print_auth(FILE *out, const struct val_point *p, int shown)
{
    if (shown)
        fprintf(out, " %-5s", p ? auth_names[p->auth] : "auth");
}

static int val_same_series(const struct val_point *a, const struct val_point *b)
{
    return a->mode == b->mode && val_same_config(a, b);
}

/* The ratio tables' pairs: for the virtual side of a cell, the same cell in the platform
 * mode (same server, users, pool, closer, fanout and delay), else -1. It tests which model
 * a point is, outside the models: the ratio is "virtual / platform", the study's question. */
static int val_ratio_pair(const struct val_point *p, int n, int i)
{
    if (p[i].mode != MODEL_VIRTUAL)
        return -1;
    for (int j = 0; j < n; j++)
        if (j != i && p[j].mode != p[i].mode && p[j].server == p[i].server &&
            p[j].users == p[i].users && val_same_config(&p[i], &p[j]))
            return j;
    return -1;
}

static const char *val_closer_name(const struct val_point *p)
{
    return p->pooled ? "-" : p->close_first >= 0 ? net_closer_names[p->close_first] : "client";
}

/* "yes", "no" or "-" (no interval): is the prediction inside the measured interval? */
static const char *val_inside(const struct val_point *p)
{
    if (!val_has_ci(p))
        return "-";
    double x = p->predicted[VM_RPS];
    return x >= p->extra[VX_CI_LOW] && x <= p->extra[VX_CI_HIGH] ? "yes" : "no";
}

/* v in fmt (" " and a conversion `width` columns wide), or "-" in its place when v is not a
 * number (unknown, or not predicted). */
static void val_print_num(FILE *out, const char *fmt, int width, double v)
{
    if (isfinite(v))
        fprintf(out, fmt, v);
    else
        fprintf(out, " %*s", width, "-");
}

static void val_print_extra_row(FILE *out, const struct val_point *p, int shown)
{
    char ports[24] = "-";
    if (!isnan(p->extra[VX_PORT_LOW]))
        snprintf(ports, sizeof ports, "%.0f-%.0f", p->extra[VX_PORT_LOW], p->extra[VX_PORT_HIGH]);
    fprintf(out, "%7ld %-8s %-4s %-6s %-11s %4.0f", p->users, model_names[p->mode],
            p->pooled ? "on" : "off", val_closer_name(p), ports,
            isnan(p->extra[VX_RUNS]) ? 1 : p->extra[VX_RUNS]);
    val_print_auth(out, p, shown);
    fprintf(out, " | %9.1f", p->measured[VM_RPS]);
    if (val_has_ci(p))
        fprintf(out, " [%9.1f, %9.1f]", p->extra[VX_CI_LOW], p->extra[VX_CI_HIGH]);
    else
        fprintf(out, " %23s", "(one run)");
    fprintf(out, " %9.1f %-6s |", p->predicted[VM_RPS], val_inside(p));
    val_print_num(out, " %5.1f%%", 6, 100 * val_fail_frac(p, VX_FAILED));
    val_print_num(out, " %5.1f%%", 6, 100 * val_fail_frac(p, VX_FAILED_NO_PORT));
    fputs(" |", out);
    val_print_num(out, " %5.1f%%", 6, 100 * p->pred.fail_frac);
    val_print_num(out, " %5.1f%%", 6, 100 * p->pred.no_port_frac);
    fprintf(out, " | %s: %s\n", p->pred.binding >= 0 ? bound_keys[p->pred.binding] : "none",
            p->pred.bound_what);
}

/* "yes", "no" or "-" (no interval or no prediction): is the predicted ratio in [lo, hi]? */
static const char *val_ratio_inside(double pr, double lo, double hi)
{
    if (isnan(lo) || isnan(hi) || !isfinite(pr))
        return "-";
    return pr >= lo && pr <= hi ? "yes" : "no";
}

static void val_print_extra(FILE *out, const struct val_point *p, int n)
{
    fputs("\nthroughput: the mean over runs with its Student-t 95% interval; inside: the "
          "prediction is in it. failed: the share of the window's requests, measured and "
          "predicted\n",
          out);
    int shown = val_has_auth(p, n);
    fprintf(out, "%7s %-8s %-4s %-6s %-11s %4s", "users", "mode", "pool", "close", "ports", "runs");
    val_print_auth(out, NULL, shown);
    fprintf(out, " | %9s %23s %9s %-6s | %6s %6s | %6s %6s | %s\n", "req/s", "95% interval",
            "predicted", "inside", "failed", "noport", "pred.", "noport", "binding bound");
    for (int i = 0; i < n; i++)
        val_print_extra_row(out, &p[i], shown);
    int header = 0;
    for (int i = 0; i < n; i++) {
        int j = val_ratio_pair(p, n, i);
        if (j < 0)
            continue;
        if (!header++) {
            fprintf(out,
                    "\nvirtual / platform throughput (95%% interval: delta method on the log "
                    "ratio, Welch-Satterthwaite degrees of freedom; inside: the predicted ratio "
                    "is in it)\n%-6s %7s %-4s %-6s %3s %7s",
                    "server", "users", "pool", "close", "K", "D ms");
            val_print_auth(out, NULL, shown);
            fprintf(out, " | %8s %21s | %9s %7s %-6s\n", "measured", "95% interval", "predicted",
                    "error", "inside");
        }
        double lo, hi, r = val_ratio(&p[i], &p[j], &lo, &hi);
        double pr =
            p[j].predicted[VM_RPS] > 0 ? p[i].predicted[VM_RPS] / p[j].predicted[VM_RPS] : NAN;
        fprintf(out, "%-6s %7ld %-4s %-6s %3d %7.1f", val_server_names[p[i].server], p[i].users,
                p[i].pooled ? "on" : "off", val_closer_name(&p[i]), p[i].fanout, p[i].delay_ms);
        val_print_auth(out, &p[i], shown);
        fprintf(out, " | %8.2f", r);
        if (isnan(lo))
            fprintf(out, " %21s", "(a single run)");
        else
            fprintf(out, " [%8.2f, %8.2f]", lo, hi);
        fputs(" |", out);
        val_print_num(out, " %9.2f", 9, pr);
        val_print_num(out, " %+6.1f%%", 7,
                      isfinite(pr) && isfinite(r) ? 100 * val_rel(r, pr) : NAN);
        fprintf(out, " %s\n", val_ratio_inside(pr, lo, hi));
    }
}

/* Does any row carry the fan-out's columns? Only then are they reported (val_print_fan). */
static int val_has_fan(const struct val_point *p, int n)
{
    for (int i = 0; i < n; i++) {
        if (p[i].parallel)
            return 1;
        for (int k = 0; k < VF_N; k++)
            if (!isnan(p[i].fan[k]))
                return 1;
    }
    return 0;
}

static const char *val_fan_policy(const struct val_point *p)
{
    return p->parallel ? on_failure_names[p->on_failure] : "in turn";
}

/* The fan-out under failures, measured beside predicted. */
static void val_print_fan(FILE *out, const struct val_point *p, int n)
{
    static const char *const label[] = {"failed p50", "failed p99", "calls/req", "conn ms/req"};
    fputs("\nthe fan-out under failures (a share of the calls fail after a time): the failed "
          "requests' latency (ms), and per request the calls begun and the time they held a "
          "connection (ms)\n",
          out);
    fprintf(out, "%7s %-8s %2s %-8s %5s %8s", "users", "mode", "K", "policy", "share", "after ms");
    for (int k = VF_MEASURED; k < VF_N; k++)
        fprintf(out, " | %11s %9s", label[k - VF_MEASURED], "predicted");
    fputc('\n', out);
    for (int i = 0; i < n; i++) {
        fprintf(out, "%7ld %-8s %2d %-8s", p[i].users, model_names[p[i].mode], p[i].fanout,
                val_fan_policy(&p[i]));
        val_print_num(out, " %5.2f", 5, p[i].fan[VF_SHARE]);
        val_print_num(out, " %8.1f", 8, p[i].fan[VF_AFTER_MS]);
        for (int k = VF_MEASURED; k < VF_N; k++) {
            fputs(" |", out);
            val_print_num(out, " %11.2f", 11, p[i].fan[k]);
            val_print_num(out, " %9.2f", 9, p[i].fan_pred[k]);
        }
        fputc('\n', out);
    }
}

static void val_json_fan(FILE *out, const struct val_point *p)
{
    fprintf(out, ", \"on_failure\": \"%s\"", val_fan_policy(p));
    rep_json_number(out, ", \"fail_share\": ", "%.6g", p->fan[VF_SHARE]);
    rep_json_number(out, ", \"fail_after_ms\": ", "%.6g", p->fan[VF_AFTER_MS]);
    for (int k = VF_MEASURED; k < VF_N; k++) {
        fprintf(out, ", \"%s\": {", res_cols[val_fan_cols[k]].name);
        rep_json_number(out, "\"measured\": ", "%.6g", p->fan[k]);
        rep_json_number(out, ", \"predicted\": ", "%.6g", p->fan_pred[k]);
        fputc('}', out);
    }
}

static void val_json_extra(FILE *out, const struct val_point *p)
{
    rep_json_number(out, ", \"runs\": ", "%g", p->extra[VX_RUNS]);
    fputs(", \"throughput_ci95\": ", out);
    if (val_has_ci(p))
        fprintf(out, "[%.6g, %.6g], \"predicted_in_ci95\": %s", p->extra[VX_CI_LOW],
                p->extra[VX_CI_HIGH], strcmp(val_inside(p), "yes") ? "false" : "true");
    else
        fputs("null, \"predicted_in_ci95\": null", out);
    fprintf(out, ", \"close_first\": \"%s\"", val_closer_name(p));
    rep_json_number(out, ", \"port_low\": ", "%g", p->extra[VX_PORT_LOW]);
    rep_json_number(out, ", \"port_high\": ", "%g", p->extra[VX_PORT_HIGH]);
    rep_json_number(out, ", \"tw_reuse\": ", "%g", p->extra[VX_TW_REUSE]);
    rep_json_number(out, ", \"failure_fraction\": {\"measured\": ", "%.6g",
                    val_fail_frac(p, VX_FAILED));
    fprintf(out,
            ", \"predicted\": %.6g}, \"no_port_fraction\": {\"measured\": ", p->pred.fail_frac);
    rep_json_number(out, "", "%.6g", val_fail_frac(p, VX_FAILED_NO_PORT));
    fprintf(out, ", \"predicted\": %.6g}, \"binding_bound\": \"%s\", \"binding_bound_rps\": ",
            p->pred.no_port_frac, p->pred.binding >= 0 ? bound_keys[p->pred.binding] : "none");
    rep_json_number(out, "", "%.6g", p->pred.bound_rps);
    rep_json_string(out, ", \"binding_bound_what\": ", p->pred.bound_what);
}

static void val_json_ratios(FILE *out, const struct val_point *p, int n)
{
    int k = 0;
    fputs(",\n\"throughput_ratios\": [", out);
    for (int i = 0; i < n; i++) {
        int j = val_ratio_pair(p, n, i);
        if (j < 0)
            continue;
        double lo, hi, r = val_ratio(&p[i], &p[j], &lo, &hi);
        double pr =
            p[j].predicted[VM_RPS] > 0 ? p[i].predicted[VM_RPS] / p[j].predicted[VM_RPS] : NAN;
        fprintf(out,
                "%s\n  {\"server\": \"%s\", \"users\": %ld, \"pool\": \"%s\", \"close_first\": "
                "\"%s\", \"fanout\": %d, \"delay_ms\": %g, \"measured\": ",
                k++ ? "," : "", val_server_names[p[i].server], p[i].users,
                p[i].pooled ? "on" : "off", val_closer_name(&p[i]), p[i].fanout, p[i].delay_ms);
        rep_json_number(out, "", "%.6g", r);
        if (val_has_auth(p, n))
            fprintf(out, ", \"auth\": \"%s\"", auth_names[p[i].auth]);
        fputs(", \"ci95\": ", out);
        if (isnan(lo))
            fputs("null", out);
        else
            fprintf(out, "[%.6g, %.6g]", lo, hi);
        rep_json_number(out,
                        ", \"interval\": \"delta method on the log ratio, Welch-Satterthwaite "
                        "df\", \"predicted\": ",
                        "%.6g", pr);
        rep_json_number(out, ", \"rel_error\": ", "%.6g", val_rel(r, pr));
        const char *in = val_ratio_inside(pr, lo, hi);
        fprintf(out, ", \"predicted_in_ci95\": %s}",
                !strcmp(in, "-")     ? "null"
                : !strcmp(in, "yes") ? "true"
                                     : "false");
    }
    fputs("]", out);
}

/* ---- Predicted curves (--plot) ---- */

/* A series of points: one mode and configuration (pool, closer, K, D) over users. Its curve
 * is predicted at each users value measured and between them (at the geometric mean of two
 * neighbours on a logarithmic axis, the arithmetic one otherwise), each the mean of
 * VAL_BAND_REPS replications with its Student-t 95% interval: the band. */
#define VAL_CURVE_MAX  48
#define VAL_BAND_REPS  5
#define VAL_SERIES_MAX 12
struct val_series {
    int first; /* its first point, whose configuration it shares */
    int n;     /* curve points */
    double users[VAL_CURVE_MAX];
    double mean[VM_N][VAL_CURVE_MAX], half[VM_N][VAL_CURVE_MAX];
};

/* The series of the points, in order of first appearance; returns how many (at most max). */
static int val_series_find(const struct val_point *p, int n, struct val_series *sr, int max)
{
    int ns = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < ns && !val_same_series(&p[sr[k].first], &p[i]))
            k++;
        if (k == ns && ns < max)
            sr[ns++] = (struct val_series){.first = i};
    }
    return ns;
}

/* The users values of series sr's curve: those measured, sorted, with a point between each
 * two (log: their geometric mean), rounded to whole users and never repeated. */
static void val_series_users(struct val_series *sr, const struct val_point *p, int n, int log)
{
    long u[VAL_CURVE_MAX];
    int m = 0;
    for (int i = 0; i < n && m < VAL_CURVE_MAX / 2; i++) {
        int seen = 0;
        for (int k = 0; k < m; k++)
            seen |= u[k] == p[i].users;
        if (val_same_series(&p[sr->first], &p[i]) && !seen)
            u[m++] = p[i].users;
    }
    for (int a = 1; a < m; a++) /* insertion sort: a few values */
        for (int b = a; b > 0 && u[b - 1] > u[b]; b--) {
            long t = u[b];
            u[b] = u[b - 1], u[b - 1] = t;
        }
    sr->n = 0;
    for (int i = 0; i < m; i++) {
        if (i > 0) {
            double mid = log ? sqrt((double)u[i - 1] * (double)u[i]) : (u[i - 1] + u[i]) / 2.0;
            long w = lround(mid);
            if (w > u[i - 1] && w < u[i])
                sr->users[sr->n++] = (double)w;
        }
        sr->users[sr->n++] = (double)u[i];
    }
}

/* The measured point of the series nearest in users: its window and network are the
 * predictions' between measured values. */
static int val_series_template(const struct val_series *sr, const struct val_point *p, int n,
                               double users)
{
    int best = sr->first;
    for (int i = 0; i < n; i++)
        if (val_same_series(&p[sr->first], &p[i]) &&
            fabs(log((double)p[i].users / users)) < fabs(log((double)p[best].users / users)))
            best = i;
    return best;
}

/* Predict series sr's curve: VAL_BAND_REPS replications a point. 0, or -1 with err. */
static int val_series_predict(struct val_series *sr, const struct val_point *p, int n, int log,
                              const char *path, const char *calibration, const char *const *sets,
                              int nsets, char *err, size_t errlen)
{
    val_series_users(sr, p, n, log);
    for (int j = 0; j < sr->n; j++) {
        double x[VM_N][VAL_BAND_REPS];
        for (int r = 0; r < VAL_BAND_REPS; r++) {
            struct val_point pt = p[val_series_template(sr, p, n, sr->users[j])];
            pt.users = (long)sr->users[j];
            pt.rep = r;
            if (val_simulate(&pt, path, calibration, sets, nsets, err, errlen) < 0)
                return -1;
            for (int k = 0; k < VM_N; k++)
                x[k][r] = pt.predicted[k];
        }
        for (int k = 0; k < VM_N; k++) {
            double sum = 0, ss = 0, mean;
            for (int r = 0; r < VAL_BAND_REPS; r++)
                sum += x[k][r];
            mean = sum / VAL_BAND_REPS;
            for (int r = 0; r < VAL_BAND_REPS; r++)
                ss += (x[k][r] - mean) * (x[k][r] - mean);
            sr->mean[k][j] = mean;
            sr->half[k][j] =
                stat_t975(VAL_BAND_REPS - 1) * sqrt(ss / (VAL_BAND_REPS - 1) / VAL_BAND_REPS);
        }
    }
    return 0;
}

/* A point's spread over runs: the 95% interval of its mean, else its min and max, else none
 * (NAN); the words say which. */
static const char *val_spread(const struct val_point *p, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (val_has_ci(p)) {
        *lo = p->extra[VX_CI_LOW], *hi = p->extra[VX_CI_HIGH];
        return "95% interval of the mean";
    }
    if (p->extra[VX_RUNS] >= 2 && !isnan(p->extra[VX_MIN]) && !isnan(p->extra[VX_MAX])) {
        *lo = p->extra[VX_MIN], *hi = p->extra[VX_MAX];
        return "min-max";
    }
    return NULL;
}

/* A series' name in a legend: its mode and what sets it apart. */
static void val_series_name(char *buf, size_t len, const struct val_point *p, int detail)
{
    if (!detail)
        snprintf(buf, len, "%s", model_names[p->mode]);
    else
        snprintf(buf, len, "%s, pool %s%s%s, %d x %g ms%s%s", model_names[p->mode],
                 p->pooled ? "on" : "off", p->pooled ? "" : ", closer ",
                 p->pooled ? "" : val_closer_name(p), p->fanout, p->delay_ms,
                 p->auth ? ", auth " : "", p->auth ? auth_names[p->auth] : "");
}

static void val_print_text(FILE *out, const struct val_point *p, int n)
{
    int shown = val_has_auth(p, n);
    fprintf(out, "%7s %-8s %-4s %2s %6s", "users", "mode", "pool", "K", "D ms");
    val_print_auth(out, NULL, shown);
    for (int k = 0; k < VM_N; k++)
        fprintf(out, " | %9s %9s %6s", val_metrics[k].label, "predicted", "error");
    fputs(" | steal\n", out);
    for (int i = 0; i < n; i++) {
        fprintf(out, "%7ld %-8s %-4s %2d %6.1f", p[i].users, model_names[p[i].mode],
                p[i].pooled ? "on" : "off", p[i].fanout, p[i].delay_ms);
        val_print_auth(out, &p[i], shown);
        for (int k = 0; k < VM_N; k++) {
            double scale = k == VM_RSS ? 1.0 / 1048576 : 1;
            if (val_unmodelled(&p[i], k))
                fprintf(out, " | %9.1f %16s", p[i].measured[k] * scale, "not modelled");
            else
                fprintf(out, " | %9.1f %9.1f %+5.0f%%", p[i].measured[k] * scale,
                        p[i].predicted[k] * scale,
                        100 * val_rel(p[i].measured[k], p[i].predicted[k]));
        }
        if (p[i].conditions[VC_STEAL] >= 0)
            fprintf(out, " | %4.1f%%\n", p[i].conditions[VC_STEAL]);
        else
            fputs(" |     -\n", out);
    }
    for (int calm = 0; calm <= val_disturbed(p, n); calm++) {
        double med, max;
        int m = val_summary(p, n, VM_RPS, calm, &med, &max);
        fputs(calm ? "calm points" : "summary", out);
        if (calm)
            fprintf(out, " (%d of %d, steal <= %g%%)", m, n, VAL_CALM_STEAL_PCT);
        fputs(": |relative error| median (max):", out);
        for (int k = 0; k < VM_N; k++)
            if (val_summary(p, n, k, calm, &med, &max))
                fprintf(out, "  %s %.1f%% (%.1f%%)", res_cols[val_metrics[k].col].name, 100 * med,
                        100 * max);
            else
                fprintf(out, "  %s not modelled", res_cols[val_metrics[k].col].name);
        fputc('\n', out);
    }
    if (n && p[0].server == VS_JAVA) /* one server a validation (val_keep) */
        fprintf(out, "java: %s: those columns are measured only\n", VAL_JAVA_UNMODELLED);
    val_print_cpu_tail(out, p, n);
    if (val_has_extra(p, n))
        val_print_extra(out, p, n);
    if (val_has_fan(p, n))
        val_print_fan(out, p, n);
}

static void val_print_json(FILE *out, const struct val_point *p, int n)
{
    fputs("{\"points\": [\n", out);
    for (int i = 0; i < n; i++) {
        fprintf(out,
                "  {\"users\": %ld, \"mode\": \"%s\", \"pool\": \"%s\", \"fanout\": %d, "
                "\"delay_ms\": %g",
                p[i].users, model_names[p[i].mode], p[i].pooled ? "on" : "off", p[i].fanout,
                p[i].delay_ms);
        for (int k = 0; k < VM_N; k++) { /* an unmodelled metric: null, and says so */
            int un = val_unmodelled(&p[i], k);
            double pr = p[i].predicted[k];
            fprintf(out, ", \"%s\": {\"measured\": %.6g", res_cols[val_metrics[k].col].name,
                    p[i].measured[k]);
            rep_json_number(out, ", \"predicted\": ", "%.6g", un ? NAN : pr);
            rep_json_number(out, ", \"rel_error\": ", "%.6g",
                            un ? NAN : val_rel(p[i].measured[k], pr));
            fputs(un ? ", \"not_modelled\": true}" : "}", out);
        }
        if (!isnan(p[i].server_p99)) /* the cpu: line's split, where the CSV has it */
            fprintf(out, ", \"server_p99_ms\": %.6g", p[i].server_p99);
        fprintf(out, ", \"server\": \"%s\"", val_server_names[p[i].server]);
        if (val_has_auth(p, n))
            fprintf(out, ", \"auth\": \"%s\"", auth_names[p[i].auth]);
        if (p[i].conditions[VC_STEAL] >= 0)
            fprintf(out, ", \"steal_pct\": %g", p[i].conditions[VC_STEAL]);
        if (val_has_extra(p, n))
            val_json_extra(out, &p[i]);
        if (val_has_fan(p, n))
            val_json_fan(out, &p[i]);
        fprintf(out, "}%s\n", i + 1 < n ? "," : "");
    }
    fputs("]", out);
    if (val_has_extra(p, n))
        val_json_ratios(out, p, n);
    for (int calm = 0; calm <= val_disturbed(p, n); calm++) {
        fprintf(out, ",\n\"%s\": {", calm ? "summary_calm" : "summary");
        for (int k = 0; k < VM_N; k++) {
            double med, max;
            const char *name = val_metrics[k].summary;
            int m = val_summary(p, n, k, calm, &med, &max);
            if (calm && k == 0)
                fprintf(out, "\"points\": %d, \"max_steal_pct\": %g, ", m, VAL_CALM_STEAL_PCT);
            fprintf(out, "%s\"%s_median_rel_error\": %.6g, \"%s_max_rel_error\": %.6g",
                    k ? ", " : "", name, med, name, max);
        }
        fputs("}", out);
    }
    fputs("}\n", out);
}

/* ---- The port wall over time: a timeline CSV ----
 *
 * `aggregator bench --timeline` writes a row per whole second of a cell's measured run
 * (t_s = 1, 2, ... since its load started): requests served and failed in that second,
 * failed_no_port among them, and the sockets in TIME_WAIT in the cell's network namespace at
 * its end. ./sim --validate of such a file (found by its t_s column) simulates each cell
 * (server, mode, pool, closer, users, K, D, its ports and tcp_tw_reuse; TIME_WAIT 60 s, Linux's
 * fixed value) over the same seconds from a cold start, and puts the seconds side by side:
 * the time to the first no_port, the throughput after the wall over one TIME_WAIT period,
 * the failure fraction where there is no wall (after one, failures a second are the
 * client's pace: not predicted). Runs of one cell are averaged second by second. */

enum tl_series { TL_SERVED, TL_FAILED, TL_NO_PORT, TL_TIME_WAIT, TL_N };
/* The columns are tl_cols' (the shared block, II.3); the four series are TLC_SERVED on, in
 * enum tl_series order. */
#define TL_MAX_S     3600 /* seconds of one cell: tl_cols[TLC_T].hi */
#define TL_MAX_CELLS 16
#define TL_STEP      (10 * MS) /* the prediction's look for its first no_port */
#define TL_TW_S      60        /* s: Linux's TIME_WAIT, hard-coded (TCP_TIMEWAIT_LEN) */

/* One cell: its conditions (as a point, to build the scenario), its seconds measured (the
 * mean over runs) and predicted. Index t - 1 holds second t, the interval (t - 1, t] s. */
struct tl_cell {
    struct val_point pt; /* server, mode, pooled, close_first, users, K, D, ports */
    int n;               /* seconds: the longest run's */
    int runs;            /* runs seen */
    double *meas[TL_N], *pred[TL_N];
    int *seen;                   /* runs that measured second t */
    double wall_meas, wall_pred; /* s: the first no_port, NAN if none */
    int wall_by_failures;        /* wall_meas is the client's first failures (no count then) */
};

static void tl_free(struct tl_cell *c, int n)
{
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < TL_N; k++) {
            free(c[i].meas[k]);
            free(c[i].pred[k]);
        }
        free(c[i].seen);
    }
}

/* Is this file a timeline? Its header names a t_s column. */
static int tl_is_timeline(const char *path)
{
    char line[VAL_MAX_LINE], *field[VAL_MAX_FIELDS], err[8];
    FILE *f = io_open_in(path, err, sizeof err); /* a FIFO or a directory: not one */
    if (!f)
        return 0;
    int yes = fgets(line, sizeof line, f) &&
              val_column(field, val_split(line, field, VAL_MAX_FIELDS), tl_cols[TLC_T].name) >= 0;
    fclose(f);
    return yes;
}

/* Column k (enum tl_col) of a row by tl_cols' rule, or -1 after a message naming it. */
static int tl_value(char **f, const int *col, int k, double *out, const struct scn_src *src)
{
    const struct csv_col *c = &tl_cols[k];
    const char *v = col[k] >= 0 ? f[col[k]] : "0"; /* only rampup_s may be absent: 0 s */
    if (val_value(c, v, out) < 0)
        return scn_fail(src, "%s: '%s' is not a %s from %g to %g%s", c->name, v,
                        c->type == CSV_WHOLE ? "whole number" : "number", c->lo, c->hi,
                        c->unknown ? " (or -1, unknown)" : "");
    return 0;
}

/* The conditions of a row, as a point (what val_scenario builds from). */
static int tl_conditions(char **f, const int *col, struct val_point *pt, const struct scn_src *src)
{
    double x, lo, hi, reuse;
    *pt = (struct val_point){.line = src->line, .close_first = -1};
    for (int k = 0; k < VX_N; k++)
        pt->extra[k] = NAN;
    const char *mode = f[col[TLC_MODE]], *pool = f[col[TLC_POOL]], *srv = f[col[TLC_SERVER]];
    const char *closer = f[col[TLC_CLOSE_FIRST]];
    pt->mode = model_named(mode);
    pt->pooled = !strcmp(pool, "on") ? 1 : !strcmp(pool, "off") ? 0 : -1;
    pt->server = val_server_named(srv);
    if (pt->mode < 0 || pt->pooled < 0 || pt->server < 0)
        return scn_fail(src,
                        "mode '%s', pool '%s', server '%s': want platform|virtual, on|off, c|java",
                        mode, pool, srv);
    for (int k = 0; k < CLOSE_N; k++)
        pt->close_first = !strcmp(closer, net_closer_names[k]) ? k : pt->close_first;
    if (pt->close_first < 0 && strcmp(closer, "-"))
        return scn_fail(src, "close_first '%s' is not client, server or -", closer);
    if (tl_value(f, col, TLC_USERS, &x, src) < 0)
        return -1;
    pt->users = (long)x;
    if (tl_value(f, col, TLC_FANOUT, &x, src) < 0)
        return -1;
    if (x > MAX_STEPS) /* the program is call(backend)*fanout: a step per call */
        return scn_fail(src, "fanout %.0f: the simulator runs at most %d calls per request", x,
                        MAX_STEPS);
    pt->fanout = (int)x;
    if (tl_value(f, col, TLC_DELAY_MS, &pt->delay_ms, src) < 0 ||
        tl_value(f, col, TLC_PORT_LOW, &lo, src) < 0 ||
        tl_value(f, col, TLC_PORT_HIGH, &hi, src) < 0 ||
        tl_value(f, col, TLC_TW_REUSE, &reuse, src) < 0 ||
        tl_value(f, col, TLC_RAMPUP, &pt->conditions[VC_RAMPUP], src) < 0)
        return -1;
    if (hi < lo)
        return scn_fail(src, "port_high: '%s' is not a whole number from %g to %g",
                        f[col[TLC_PORT_HIGH]], lo, tl_cols[TLC_PORT_HIGH].hi);
    pt->extra[VX_PORT_LOW] = lo, pt->extra[VX_PORT_HIGH] = hi, pt->extra[VX_TW_REUSE] = reuse;
    pt->conditions[VC_STEAL] = -1;
    return 0;
}

/* The cell of a row's conditions, made when new; NULL after a message when there are too many. */
static struct tl_cell *tl_cell_of(struct tl_cell *c, int *n, const struct val_point *pt,
                                  const struct scn_src *src)
{
    for (int i = 0; i < *n; i++)
        if (c[i].pt.server == pt->server && val_same_series(&c[i].pt, pt) &&
            c[i].pt.users == pt->users && c[i].pt.extra[VX_PORT_LOW] == pt->extra[VX_PORT_LOW] &&
            c[i].pt.extra[VX_PORT_HIGH] == pt->extra[VX_PORT_HIGH] &&
            c[i].pt.extra[VX_TW_REUSE] == pt->extra[VX_TW_REUSE])
            return &c[i];
    if (*n == TL_MAX_CELLS) {
        scn_fail(src, "more than %d cells in one timeline", TL_MAX_CELLS);
        return NULL;
    }
    struct tl_cell *x = &c[(*n)++];
    *x = (struct tl_cell){.pt = *pt, .wall_meas = NAN, .wall_pred = NAN};
    for (int k = 0; k < TL_N; k++) {
        x->meas[k] = xcalloc(TL_MAX_S, sizeof *x->meas[k]);
        x->pred[k] = xcalloc(TL_MAX_S, sizeof *x->pred[k]);
    }
    x->seen = xcalloc(TL_MAX_S, sizeof *x->seen);
    return x;
}

/* A row's place: its cell, run and second, and its line. Two rows in one place are one
 * second measured twice: averaging them would count it twice. */
struct tl_place {
    int cell, run, t, line;
};

static int tl_place_cmp(const void *a, const void *b)
{
    const struct tl_place *x = a, *y = b;
    return x->cell != y->cell ? x->cell - y->cell
           : x->run != y->run ? x->run - y->run
           : x->t != y->t     ? x->t - y->t
                              : x->line - y->line;
}

/* -1 after a message at the later line when two rows share a place (sorts *p). */
static int tl_unique(struct tl_place *p, size_t n, const struct scn_src *src)
{
    qsort(p, n, sizeof *p, tl_place_cmp);
    for (size_t i = 1; i < n; i++) {
        const struct tl_place *a = &p[i - 1], *b = &p[i];
        if (a->cell == b->cell && a->run == b->run && a->t == b->t) {
            struct scn_src at = *src;
            at.line = b->line;
            return scn_fail(&at, "run %d, second %d of this cell again (line %d has it)", b->run,
                            b->t, a->line);
        }
    }
    return 0;
}

/* A second's counts that contradict each other: more requests failed for want of a port than
 * failed at all, more sockets in TIME_WAIT than the range has ports. bench counts no_port
 * once a request and TIME_WAIT once a port, so a row that breaks either is not bench's. */

/* -1 after a message when row's counts v (enum tl_series) contradict each other or its ports
 * lo..hi; an unknown count (NAN) contradicts nothing. */
static int tl_counts_agree(const double *v, double lo, double hi, const struct scn_src *src)
{
    if (v[TL_NO_PORT] > v[TL_FAILED])
        return scn_fail(src, "failed_no_port %g is above failed %g", v[TL_NO_PORT], v[TL_FAILED]);
    if (v[TL_TIME_WAIT] > hi - lo + 1)
        return scn_fail(src, "time_wait %g is above the %g ports of %g-%g", v[TL_TIME_WAIT],
                        hi - lo + 1, lo, hi);
    return 0;
}

/* One data row into its cell's sums; *place says where it was. */
static int tl_row(char **f, int n, int nhead, const int *col, struct tl_cell *c, int *nc,
                  struct tl_place *place, const struct scn_src *src)
{
    struct val_point pt;
    double run, t, v[TL_N];
    if (n != nhead)
        return scn_fail(src, "%d fields, the header has %d", n, nhead);
    if (tl_conditions(f, col, &pt, src) < 0 || tl_value(f, col, TLC_RUN, &run, src) < 0 ||
        tl_value(f, col, TLC_T, &t, src) < 0)
        return -1;
    /* no_port is -1, unknown, when the server's /metrics did not answer that second or the
     * one before: that second's mean is then unknown, shown as '-' and left out. */
    for (int k = 0; k < TL_N; k++)
        if (tl_value(f, col, TLC_SERVED + k, &v[k], src) < 0)
            return -1;
    if (tl_counts_agree(v, pt.extra[VX_PORT_LOW], pt.extra[VX_PORT_HIGH], src) < 0)
        return -1;
    struct tl_cell *x = tl_cell_of(c, nc, &pt, src);
    if (!x)
        return -1;
    int i = (int)t - 1;
    for (int k = 0; k < TL_N; k++)
        x->meas[k][i] += v[k];
    x->seen[i]++;
    x->n = i + 1 > x->n ? i + 1 : x->n;
    x->runs = (int)run > x->runs ? (int)run : x->runs;
    *place = (struct tl_place){(int)(x - c), (int)run, (int)t, src->line};
    return 0;
}

/* Is second t (an index) the measured wall's? The first second the server counted a no_port
 * in, or before it one where the client saw failures while the server's counter did not
 * answer (a JVM whose busy pool also serves /metrics): that second is the wall's, said as
 * the client's first failures, since skipping it would date the wall at the counter's
 * first answer, seconds later. */
static void tl_find_wall(struct tl_cell *c, int t)
{
    if (c->meas[TL_NO_PORT][t] > 0 ||
        (isnan(c->meas[TL_NO_PORT][t]) && c->meas[TL_FAILED][t] > 0)) {
        c->wall_meas = t + 1;
        c->wall_by_failures = !(c->meas[TL_NO_PORT][t] > 0);
    }
}

/* Read a timeline CSV into cells (their sums made means), its counts checked against each
 * other (tl_counts_agree). 0, or -1 after a message. */
static int tl_read(const char *path, struct tl_cell *c, int *nc, char *err, size_t errlen)
{
    FILE *fp = io_open_in(path, err, errlen);
    if (!fp)
        return -1;
    struct scn_text text = {fp, {path, 0, err, errlen}, 0, VAL_MAX_FILE};
    char line[VAL_MAX_LINE], *f[VAL_MAX_FIELDS];
    int col[TLC_N], nhead = 0, rc;
    struct tl_place *place = NULL;
    size_t nplace = 0, cap = 0;
    *nc = 0;
    while ((rc = scn_getline(&text, line, sizeof line)) > 0) {
        int n = val_split(line, f, VAL_MAX_FIELDS);
        if (text.src.line == 1) {
            nhead = n;
            if ((rc = val_find_columns(f, n, tl_cols, TLC_N, col, "the timeline's header",
                                       &text.src)) < 0)
                break;
            continue;
        }
        if (n == 1 && !*f[0])
            continue;
        if (nplace == cap)
            place = xrealloc(place, cap = cap ? 2 * cap : 256, sizeof *place);
        if ((rc = tl_row(f, n, nhead, col, c, nc, &place[nplace++], &text.src)) < 0)
            break;
    }
    fclose(fp);
    if (rc == 0 && *nc == 0)
        rc = scn_fail(&text.src, "no data rows");
    if (rc == 0)
        rc = tl_unique(place, nplace, &text.src);
    free(place);
    for (int i = 0; i < *nc && rc == 0; i++)
        for (int t = 0; t < c[i].n; t++) {
            if (!c[i].seen[t])
                rc = scn_fail(&text.src, "%s %s: no row for second %d of %d",
                              model_names[c[i].pt.mode], c[i].pt.pooled ? "pooled" : "unpooled",
                              t + 1, c[i].n);
            for (int k = 0; k < TL_N && rc == 0; k++)
                c[i].meas[k][t] /= c[i].seen[t];
            if (rc == 0 && isnan(c[i].wall_meas))
                tl_find_wall(&c[i], t);
        }
    return rc;
}

/* From the second of the predicted wall on, a request that finds no port fails at once and
 * its user sends it again: how many fail a second is the client's pace and the CPU a failure
 * costs (a failed connect scans the port range), which the model does not know (it resends
 * after 1 ms: an upper bound, not a prediction). Those seconds' failures are NAN, not
 * predicted; what is served and the TIME_WAIT after the wall are. */
static void tl_unpredicted(struct tl_cell *c)
{
    if (isnan(c->wall_pred))
        return;
    for (int i = (int)ceil(c->wall_pred) - 1; i < c->n; i++)
        c->pred[TL_FAILED][i] = c->pred[TL_NO_PORT][i] = NAN;
}

/* The cell simulated from a cold start over its seconds: each second's served, failed,
 * no_port and TIME_WAIT sockets (ours and the services'), and the first no_port to TL_STEP. */
static int tl_predict(struct tl_cell *c, const char *path, const char *calibration,
                      const char *const *sets, int nsets, char *err, size_t errlen)
{
    struct scenario s;
    struct val_point pt = c->pt;
    pt.conditions[VC_WARMUP] = 0;
    pt.conditions[VC_WINDOW] = c->n;
    if (val_scenario(&s, &pt, path, calibration, sets, nsets, err, errlen) < 0)
        return -1;
    struct model m;
    uint64_t last[TL_N] = {0};
    model_init(&m, &s, pt.mode);
    for (simtime t = TL_STEP; t <= (simtime)c->n * SEC; t += TL_STEP) {
        model_run(&m, t);
        if (isnan(c->wall_pred) && m.stats.failed[FAIL_NO_PORT])
            c->wall_pred = (double)t / SEC;
        if (t % SEC)
            continue;
        uint64_t now[TL_N] = {m.stats.completed, 0, m.stats.failed[FAIL_NO_PORT], 0};
        for (int k = 0; k < FAIL_N; k++)
            now[TL_FAILED] += m.stats.failed[k];
        for (int i = 0; i < s.nsvc; i++)
            svc_expire(&m, &m.svc[i]);
        int i = (int)(t / SEC) - 1; /* the counters: this second's share */
        for (int k = 0; k < TL_N; k++)
            if (k != TL_TIME_WAIT) {
                c->pred[k][i] = (double)(now[k] - last[k]);
                last[k] = now[k];
            }
        c->pred[TL_TIME_WAIT][i] = m.ports_tw + m.peer_tw;
    }
    model_free(&m);
    tl_unpredicted(c);
    return 0;
}

/* The window after the wall that the throughput is averaged over: from the second after
 * the first no_port's (the measured one, else the predicted one) to the run's end. Ports
 * come back in a burst one TIME_WAIT after they were taken, and Linux's TIME_WAIT timer
 * fires up to a second or two late, so a window of exactly one period could cut the burst
 * off; to the end, it holds a whole period when the run lasts 60 s beyond the wall. [from,
 * to) in second indices; returns 0 when there is no wall. */
static int tl_after_window(const struct tl_cell *c, int *from, int *to)
{
    double wall = !isnan(c->wall_meas) ? c->wall_meas : ceil(c->wall_pred);
    if (isnan(wall))
        return 0;
    *from = (int)wall; /* the seconds after the one the wall came in */
    *to = c->n;
    return *to > *from;
}

static double tl_mean(const double *x, int from, int to)
{
    double sum = 0;
    for (int i = from; i < to; i++)
        sum += x[i];
    return to > from ? sum / (to - from) : NAN;
}

/* Requests served in the run's first TIME_WAIT period, seconds 1 to TL_TW_S: no port taken in
 * the run can come back sooner, so with the wall each served request holds K ports of the
 * range and the count is the range's worth, however fast or slow the server reached it (a
 * cold JVM takes longer to the wall, not more requests). NAN for a shorter run. */
static double tl_first_period(const struct tl_cell *c, const double *served)
{
    return c->n >= TL_TW_S ? tl_mean(served, 0, TL_TW_S) * TL_TW_S : NAN;
}

/* The most requests the first TIME_WAIT period can serve: the range's ports / K calls. */
static double tl_range_worth(const struct tl_cell *c)
{
    const struct val_point *p = &c->pt;
    return (p->extra[VX_PORT_HIGH] - p->extra[VX_PORT_LOW] + 1) / p->fanout;
}

/* failed / (served + failed) over the whole run; NAN when a second's failures are unknown. */
static double tl_fail_frac(double *const *x, int n)
{
    double f = tl_mean(x[TL_FAILED], 0, n), d = tl_mean(x[TL_SERVED], 0, n);
    if (isnan(f))
        return NAN;
    return f + d > 0 ? f / (f + d) : 0;
}

/* What a cell's text and JSON say beneath its seconds, computed once for both. */
struct tl_summary {
    int wall;                      /* a wall, measured or predicted: the after_* fields hold */
    int from, to;                  /* the window after it, [from, to) in second indices */
    double meas_rps, pred_rps;     /* req/s over that window, else over the whole run */
    double first_meas, first_pred; /* served in the first TIME_WAIT period (NAN: no wall, or
                                      a run shorter than the period) */
    double fail_meas, fail_pred;   /* the run's failure fraction (pred NAN: not predicted) */
    double failed_after;           /* measured failures a second after the wall */
};

static void tl_summarise(const struct tl_cell *c, struct tl_summary *s)
{
    *s = (struct tl_summary){.from = 0, .to = c->n};
    s->wall = tl_after_window(c, &s->from, &s->to);
    if (!s->wall)
        s->from = 0, s->to = c->n;
    s->meas_rps = tl_mean(c->meas[TL_SERVED], s->from, s->to);
    s->pred_rps = tl_mean(c->pred[TL_SERVED], s->from, s->to);
    s->first_meas = s->wall ? tl_first_period(c, c->meas[TL_SERVED]) : NAN;
    s->first_pred = s->wall ? tl_first_period(c, c->pred[TL_SERVED]) : NAN;
    s->fail_meas = tl_fail_frac(c->meas, c->n);
    s->fail_pred = tl_fail_frac(c->pred, c->n);
    s->failed_after = tl_mean(c->meas[TL_FAILED], s->from, s->to);
}

static void tl_print_cell(FILE *out, const struct tl_cell *c)
{
    const struct val_point *p = &c->pt;
    struct tl_summary s;
    tl_summarise(c, &s);
    fprintf(out,
            "\n%s %s, pool %s, closer %s, %ld users, %d x %g ms, ports %.0f-%.0f, tw_reuse %.0f, "
            "TIME_WAIT %d s, %d run%s averaged\n",
            val_server_names[p->server], model_names[p->mode], p->pooled ? "on" : "off",
            val_closer_name(p), p->users, p->fanout, p->delay_ms, p->extra[VX_PORT_LOW],
            p->extra[VX_PORT_HIGH], p->extra[VX_TW_REUSE], TL_TW_S, c->runs,
            c->runs > 1 ? "s" : "");
    fprintf(out, "%5s | %9s %9s | %9s %9s | %9s %9s | %9s %9s\n", "t_s", "served", "predicted",
            "failed", "predicted", "no_port", "predicted", "TIME_WAIT", "predicted");
    for (int t = 0; t < c->n; t++) {
        fprintf(out, "%5d", t + 1);
        for (int k = 0; k < TL_N; k++) {
            fputs(" |", out);
            val_print_num(out, " %9.0f", 9, c->meas[k][t]);
            val_print_num(out, " %9.0f", 9, c->pred[k][t]);
        }
        fputc('\n', out);
    }
    fputs("time to the first no_port: measured ", out);
    if (isnan(c->wall_meas))
        fputs("none", out);
    else
        fprintf(out, "in second %.0f%s", c->wall_meas,
                c->wall_by_failures ? " (the client's first failures: the server's no_port "
                                      "counter did not answer in that second)"
                                    : "");
    fputs(", predicted ", out);
    if (isnan(c->wall_pred))
        fputs("none", out);
    else
        fprintf(out, "%.2f s (in second %.0f)", c->wall_pred, ceil(c->wall_pred));
    if (s.wall)
        fprintf(out,
                "\nthroughput after the wall, seconds %d-%d (%d s%s): measured %.1f req/s, "
                "predicted %.1f (%+.1f%%)",
                s.from + 1, s.to, s.to - s.from,
                s.to - s.from >= TL_TW_S ? ": at least one TIME_WAIT period"
                                         : ", less than TIME_WAIT",
                s.meas_rps, s.pred_rps, 100 * val_rel(s.meas_rps, s.pred_rps));
    else
        fprintf(out, "\nno wall: throughput over the run measured %.1f req/s, predicted %.1f",
                s.meas_rps, s.pred_rps);
    if (!isnan(s.first_meas))
        fprintf(out,
                "\nserved in the first TIME_WAIT period (seconds 1-%d, before any port can come "
                "back): measured %.0f, predicted %.0f (%+.1f%%); at most the range's worth, %.0f "
                "ports / %d calls = %.0f",
                TL_TW_S, s.first_meas, s.first_pred, 100 * val_rel(s.first_meas, s.first_pred),
                p->extra[VX_PORT_HIGH] - p->extra[VX_PORT_LOW] + 1, p->fanout, tl_range_worth(c));
    if (isnan(s.fail_pred)) {
        if (s.wall)
            fprintf(out,
                    "\nfailures after the wall: measured %.0f a second (%.1f%% of the run's "
                    "requests); ",
                    s.failed_after, 100 * s.fail_meas);
        else
            fprintf(out, "\nfailures: measured %.1f%% of the run's requests; after the wall ",
                    100 * s.fail_meas);
        fputs("not predicted ('-'): a request that finds no port fails at once and is sent "
              "again, so the rate is the client's pace and what a failed connect costs, which "
              "the model does not know\n",
              out);
    } else
        fprintf(out, "\nfailure fraction over the run: measured %.1f%%, predicted %.1f%%\n",
                100 * s.fail_meas, 100 * s.fail_pred);
}

/* --json: a cell's conditions, its summary and its seconds, measured and predicted. */
static void tl_json_cell(FILE *out, const struct tl_cell *c)
{
    static const char *const names[TL_N] = {"served", "failed", "failed_no_port", "time_wait"};
    const struct val_point *p = &c->pt;
    struct tl_summary s;
    tl_summarise(c, &s);
    fprintf(out,
            "  {\"server\": \"%s\", \"mode\": \"%s\", \"pool\": \"%s\", \"close_first\": \"%s\", "
            "\"users\": %ld, \"fanout\": %d, \"delay_ms\": %g, \"port_low\": %.0f, \"port_high\": "
            "%.0f, \"tw_reuse\": %.0f, \"runs\": %d, \"time_wait_s\": %d,\n   \"first_no_port_s\": "
            "{\"measured_second\": ",
            val_server_names[p->server], model_names[p->mode], p->pooled ? "on" : "off",
            val_closer_name(p), p->users, p->fanout, p->delay_ms, p->extra[VX_PORT_LOW],
            p->extra[VX_PORT_HIGH], p->extra[VX_TW_REUSE], c->runs, TL_TW_S);
    rep_json_number(out, "", "%g", c->wall_meas);
    if (c->wall_by_failures)
        fputs(", \"measured_by\": \"the client's failures\"", out);
    rep_json_number(out, ", \"predicted\": ", "%.6g", c->wall_pred);
    fputs("},\n   \"after_wall\": ", out);
    if (s.wall)
        fprintf(out,
                "{\"from_second\": %d, \"to_second\": %d, \"measured_rps\": %.6g, "
                "\"predicted_rps\": %.6g}",
                s.from + 1, s.to, s.meas_rps, s.pred_rps);
    else
        fputs("null", out);
    if (!isnan(s.first_meas))
        fprintf(out,
                ",\n   \"first_time_wait_period\": {\"seconds\": %d, \"served_measured\": %.6g, "
                "\"served_predicted\": %.6g, \"range_worth\": %.6g}",
                TL_TW_S, s.first_meas, s.first_pred, tl_range_worth(c));
    fprintf(out, ", \"failure_fraction\": {\"measured\": %.6g, \"predicted\": ", s.fail_meas);
    rep_json_number(out, "", "%.6g", s.fail_pred);
    if (isnan(s.fail_pred))
        fputs(", \"predicted_why_null\": \"after the wall a failed request is sent again at the "
              "client's pace, which the model does not know\"",
              out);
    fputs("},\n   \"seconds\": {", out);
    for (int k = 0; k < TL_N; k++)
        for (int w = 0; w < 2; w++) {
            const double *x = w ? c->pred[k] : c->meas[k];
            fprintf(out, "%s\"%s_%s\": [", k || w ? ", " : "", names[k],
                    w ? "predicted" : "measured");
            for (int t = 0; t < c->n; t++)
                rep_json_number(out, t ? "," : "", "%.6g", x[t]);
            fputc(']', out);
        }
    fputs("}}", out);
}

static void tl_print_json(FILE *out, const struct tl_cell *c, int n)
{
    fputs("{\"cells\": [\n", out);
    for (int i = 0; i < n; i++) {
        tl_json_cell(out, &c[i]);
        fputs(i + 1 < n ? ",\n" : "\n", out);
    }
    fputs("]}\n", out);
}

/* ---- IV.4 Live telemetry ---- */

/* ./sim --live http://127.0.0.1:PORT polls a running ./aggregator's /metrics (Prometheus
 * text format) and turns successive scrapes into the same sort of time series the models
 * produce, so the window can draw measurement and prediction on one clock. Only loopback
 * addresses are accepted: this is a teaching tool, not a network scraper. */

#define LIVE_MAX_LE      64
#define LIVE_MAX_BODY    (256 * 1024) /* a longer answer is an error, not cut short */
#define LIVE_MAX_VALUE   1e15         /* a count or a byte size beyond this is not believed */
#define LIVE_DEADLINE_MS 2000         /* a whole scrape: connect, request, answer */

/* One scrape: counters and gauges as the aggregator reports them. */
struct live_scrape {
    double requests, errors, os_threads, rss, vt_parked, vt_runnable, carriers_busy;
    double pool_busy, pool_queue, connections, conns_opened, carriers, pool_size;
    int nle;
    double le[LIVE_MAX_LE],
        cum[LIVE_MAX_LE]; /* latency histogram: upper bounds (s), cumulative counts */
};

/* What successive scrapes say about an interval; times in s since the first scrape. */
struct live_sample {
    double t, rps, errors_per_s, p50_ms, p99_ms;
    double os_threads, rss, vt_parked, carriers_busy, connections, pool_queue;
};

struct live {
    char host[64];
    int port, family;
    int deadline_ms;         /* for a whole scrape, LIVE_DEADLINE_MS (a test sets less) */
    double t0, last_t;       /* wall times of the first and the previous scrape, s */
    struct live_scrape last; /* the previous scrape, for deltas */
    int have_last;
    struct live_sample *v;
    int n, cap;
};

/* The gauges read by name: one row each. */
static const struct {
    const char *name;
    size_t off;
} live_gauges[] = {
    {"agg_os_threads", offsetof(struct live_scrape, os_threads)},
    {"agg_rss_bytes", offsetof(struct live_scrape, rss)},
    {"agg_vthreads_parked", offsetof(struct live_scrape, vt_parked)},
    {"agg_vthreads_runnable", offsetof(struct live_scrape, vt_runnable)},
    {"agg_carriers_busy", offsetof(struct live_scrape, carriers_busy)},
    {"agg_pool_busy", offsetof(struct live_scrape, pool_busy)},
    {"agg_pool_queue", offsetof(struct live_scrape, pool_queue)},
    {"agg_connections", offsetof(struct live_scrape, connections)},
    {"agg_downstream_connections_opened_total", offsetof(struct live_scrape, conns_opened)},
    {"agg_carriers", offsetof(struct live_scrape, carriers)},
    {"agg_pool_size", offsetof(struct live_scrape, pool_size)},
};

/* http://HOST:PORT[/...] with HOST one of 127.0.0.1, localhost, [::1]. */
static int live_parse_url(struct live *lv, const char *url, char *err, size_t errlen)
{
    const char *p = strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
    static const struct {
        const char *host;
        int family;
    } loopback[] = {{"127.0.0.1:", AF_INET}, {"localhost:", AF_INET}, {"[::1]:", AF_INET6}};
    for (size_t i = 0; p && i < sizeof loopback / sizeof loopback[0]; i++) {
        size_t n = strlen(loopback[i].host);
        if (strncmp(p, loopback[i].host, n))
            continue;
        char *end;
        long port = strtol(p + n, &end, 10);
        if (end == p + n || (*end && *end != '/') || port < 1 || port > 65535)
            break;
        snprintf(lv->host, sizeof lv->host, "%s",
                 loopback[i].family == AF_INET ? "127.0.0.1" : "::1");
        lv->port = (int)port;
        lv->family = loopback[i].family;
        lv->deadline_ms = LIVE_DEADLINE_MS;
        return 0;
    }
    snprintf(err, errlen,
             "--live %s: want http://127.0.0.1:PORT (or localhost, [::1]); only loopback", url);
    return -1;
}

/* CLOCK_MONOTONIC in seconds: deadlines and timings do not move with the wall clock. The
 * modes (VI.2) time their runs with it too. */
static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait for `events` on fd until `deadline` (wall_now). 0: ready; -1 with errno, ETIMEDOUT
 * once the deadline has passed. */
static int live_wait(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - wall_now();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, (int)ceil(left * 1000));
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/* A non-blocking socket connected to the endpoint by `deadline`; -1 with errno. */
static int live_connect(const struct live *lv, double deadline)
{
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)lv->port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)lv->port)};
    int v4 = lv->family == AF_INET, e = 0;
    int fd = socket(lv->family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    socklen_t salen = v4 ? sizeof a4 : sizeof a6, elen = sizeof(int);
    inet_pton(lv->family, lv->host, v4 ? (void *)&a4.sin_addr : (void *)&a6.sin6_addr);
    if (fd < 0 || connect(fd, v4 ? (struct sockaddr *)&a4 : (struct sockaddr *)&a6, salen) == 0)
        return fd;
    if (errno == EINPROGRESS && live_wait(fd, POLLOUT, deadline) == 0 &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) == 0 && (errno = e) == 0)
        return fd;
    e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* By `deadline`, send all n bytes of buf (out = 1) or read into it until the peer closes or n
 * bytes came (out = 0): the bytes moved, or -1 with errno. */
static ssize_t live_io(int fd, int out, char *buf, size_t n, double deadline)
{
    size_t len = 0;
    while (len < n) {
        if (live_wait(fd, out ? POLLOUT : POLLIN, deadline) < 0)
            return -1;
        ssize_t got =
            out ? send(fd, buf + len, n - len, MSG_NOSIGNAL) : read(fd, buf + len, n - len);
        if (got == 0 && !out)
            break;
        if (got < 0 && errno != EINTR && errno != EAGAIN)
            return -1;
        len += got > 0 ? (size_t)got : 0;
    }
    return (ssize_t)len;
}

/* An HTTP answer of len bytes in buf (NUL-terminated): its body if the status line says
 * exactly 200 ("HTTP/1.1 2000" is not 200), else NULL with err. */
static const char *live_answer(const char *buf, size_t len, char *err, size_t errlen)
{
    const char *body = strstr(buf, "\r\n\r\n");
    if (strlen(buf) != len) {
        snprintf(err, errlen, "live: /metrics answered a NUL byte (not a metrics page)");
        return NULL;
    }
    if (!body || strncmp(buf, "HTTP/1.", 7) || !isdigit((unsigned char)buf[7]) ||
        strncmp(buf + 8, " 200", 4) || (buf[12] != ' ' && buf[12] != '\r')) {
        snprintf(err, errlen, "live: /metrics did not answer 200 with a body ('%.*s')",
                 (int)strcspn(buf, "\r\n") < 40 ? (int)strcspn(buf, "\r\n") : 40, buf);
        return NULL;
    }
    return body + 4;
}

/* GET /metrics; the body goes to a malloc'd NUL-terminated string. The whole scrape
 * (connect, request, answer) has lv->deadline_ms: a read timeout alone let an endpoint that
 * sends a byte a second hold --live for as long as it liked. An answer of more than
 * LIVE_MAX_BODY bytes is an error (cut short, its last metrics would be lost silently). */
static char *live_fetch(const struct live *lv, char *err, size_t errlen)
{
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: loomlab\r\nConnection: close\r\n\r\n";
    double deadline = wall_now() + lv->deadline_ms / 1e3;
    char *buf = xrealloc(NULL, LIVE_MAX_BODY + 2, 1);
    ssize_t len = -1;
    int fd = live_connect(lv, deadline);
    if (fd >= 0 && live_io(fd, 1, (char *)req, sizeof req - 1, deadline) >= 0)
        len = live_io(fd, 0, buf, LIVE_MAX_BODY + 1, deadline);
    if (len < 0 && errno == ETIMEDOUT)
        snprintf(err, errlen, "live: %s port %d: no whole answer within %d ms", lv->host, lv->port,
                 lv->deadline_ms);
    else if (len < 0)
        snprintf(err, errlen, "live: %s port %d: %s", lv->host, lv->port, strerror(errno));
    else if (len > LIVE_MAX_BODY)
        snprintf(err, errlen, "live: /metrics answered more than %d KiB", LIVE_MAX_BODY / 1024);
    if (fd >= 0)
        close(fd);
    const char *body = NULL;
    if (len >= 0 && len <= LIVE_MAX_BODY) {
        buf[len] = 0;
        body = live_answer(buf, (size_t)len, err, errlen);
    }
    if (!body) {
        free(buf);
        return NULL;
    }
    memmove(buf, body, strlen(body) + 1);
    return buf;
}

/* A value read into *sc: a count or a size, finite, from 0 to LIVE_MAX_VALUE (a NaN or a
 * 300-digit number would fill the table with nan and digits). Returns 0 or -1 with err. */
static int live_value(double v, const char *name, int line, char *err, size_t errlen)
{
    if (v >= 0 && v <= LIVE_MAX_VALUE)
        return 0;
    snprintf(err, errlen, "/metrics:%d: %.60s: %g is not a count from 0 to %g", line, name, v,
             LIVE_MAX_VALUE);
    return -1;
}

/* A histogram bucket `agg_request_seconds_bucket{le="X"} v`: its bounds rise, to +Inf, and
 * its cumulative counts never fall. Returns 0 or -1 with err. */
static int live_bucket(struct live_scrape *sc, const char *le, double v, int line, char *err,
                       size_t errlen)
{
    char *end = NULL;
    int inf = !strncmp(le, "+Inf\"", 5); /* the only bound that is not a number of seconds */
    double x = inf ? INFINITY : strtod(le, &end);
    if (sc->nle == LIVE_MAX_LE)
        return 0; /* the rest of a long histogram is not read */
    if (!inf && (end == le || *end != '"' || !(x >= 0 && x <= 1e9))) /* NaN, -Inf: refused */
        return snprintf(err, errlen, "/metrics:%d: bad bucket bound", line), -1;
    if (sc->nle && (x <= sc->le[sc->nle - 1] || v < sc->cum[sc->nle - 1]))
        return snprintf(err, errlen, "/metrics:%d: buckets out of order", line), -1;
    sc->le[sc->nle] = x;
    sc->cum[sc->nle++] = v;
    return 0;
}

/* Parse the Prometheus text format: `name{labels} value` lines, `#` comments. Unknown names
 * are skipped; a line that is not of that shape, or a value of a metric read that is not a
 * count (live_value), is an error with its line number. */
static int live_parse(const char *text, struct live_scrape *sc, char *err, size_t errlen)
{
    memset(sc, 0, sizeof *sc);
    int line = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char l[512];
        line++;
        snprintf(l, sizeof l, "%.*s", (int)(n < sizeof l - 1 ? n : sizeof l - 1), p);
        p += n + (eol != NULL);
        size_t m = strlen(l);
        if (m && l[m - 1] == '\r')
            l[m - 1] = 0; /* CRLF line ends */
        if (!l[0] || l[0] == '#')
            continue;
        char *sp = strrchr(l, ' '), *end;
        if (!sp) {
            snprintf(err, errlen, "/metrics:%d: no value", line);
            return -1;
        }
        *sp = 0;
        double v = strtod(sp + 1, &end);
        if (end == sp + 1 || *end) {
            snprintf(err, errlen, "/metrics:%d: bad value '%.40s'", line, sp + 1);
            return -1;
        }
        int rc = 0;
        if (!strncmp(l, "agg_requests_total{", 19)) {
            const char *status = strstr(l, "status=\"");
            if (!(rc = live_value(v, l, line, err, errlen))) {
                sc->requests += v;
                if (status && status[8] != '2')
                    sc->errors += v;
            }
        } else if (!strncmp(l, "agg_request_seconds_bucket{le=\"", 31)) {
            if (!(rc = live_value(v, l, line, err, errlen)))
                rc = live_bucket(sc, l + 31, v, line, err, errlen);
        } else {
            for (size_t g = 0; g < sizeof live_gauges / sizeof live_gauges[0] && !rc; g++)
                if (!strcmp(l, live_gauges[g].name) && !(rc = live_value(v, l, line, err, errlen)))
                    *(double *)((char *)sc + live_gauges[g].off) = v;
        }
        if (rc < 0)
            return -1;
    }
    if (sc->requests > LIVE_MAX_VALUE)
        return snprintf(err, errlen, "/metrics: agg_requests_total: more than %g", LIVE_MAX_VALUE),
               -1;
    return 0;
}

/* The q-quantile (ms) of the requests between two scrapes, interpolated inside its bucket. */
static double live_quantile(const struct live_scrape *a, const struct live_scrape *b, double q)
{
    int n = a->nle < b->nle ? a->nle : b->nle;
    if (n == 0)
        return 0;
    double total = b->cum[n - 1] - a->cum[n - 1], want = q * total, below = 0, lo = 0;
    if (total <= 0)
        return 0;
    for (int i = 0; i < n; i++) {
        double c = b->cum[i] - a->cum[i];
        if (c >= want) {
            double hi = isfinite(b->le[i]) ? b->le[i] : lo * 2;
            double in = c - below;
            return 1e3 * (lo + (hi - lo) * (in > 0 ? (want - below) / in : 1));
        }
        below = c;
        lo = b->le[i];
    }
    return 1e3 * lo;
}

/* Did the counters go back between scrapes a and b? The aggregator restarted: as
 * Prometheus's rate() does, b's counts are then the increase since a (a rate is never
 * negative). So are they when the histograms' buckets differ. */
static int live_reset(const struct live_scrape *a, const struct live_scrape *b)
{
    int reset = b->requests < a->requests || b->errors < a->errors || a->nle != b->nle;
    for (int i = 0; i < a->nle && !reset; i++)
        reset = b->cum[i] < a->cum[i] || b->le[i] != a->le[i];
    return reset;
}

/* The sample of the dt seconds (> 0) between scrapes a and b, at t s since the first. */
static struct live_sample live_delta(const struct live_scrape *a, const struct live_scrape *b,
                                     double t, double dt)
{
    struct live_scrape zero = {.nle = b->nle};
    memcpy(zero.le, b->le, sizeof zero.le);
    const struct live_scrape *from = live_reset(a, b) ? &zero : a;
    return (struct live_sample){.t = t,
                                .rps = (b->requests - from->requests) / dt,
                                .errors_per_s = (b->errors - from->errors) / dt,
                                .p50_ms = live_quantile(from, b, 0.50),
                                .p99_ms = live_quantile(from, b, 0.99),
                                .os_threads = b->os_threads,
                                .rss = b->rss,
                                .vt_parked = b->vt_parked,
                                .carriers_busy = b->carriers_busy,
                                .connections = b->connections,
                                .pool_queue = b->pool_queue};
}

/* Scrape once at wall time `now` (s) and append a sample; the first scrape only sets t0. */
static int live_poll(struct live *lv, double now, char *err, size_t errlen)
{
    struct live_scrape sc;
    char *body = live_fetch(lv, err, errlen);
    if (!body)
        return -1;
    int rc = live_parse(body, &sc, err, errlen);
    free(body);
    if (rc < 0)
        return -1;
    if (!lv->have_last)
        lv->t0 = now;
    double dt = lv->have_last ? now - lv->last_t : 0;
    if (dt > 0) {
        if (lv->n == lv->cap)
            lv->v = xrealloc(lv->v, (size_t)(lv->cap = lv->cap ? 2 * lv->cap : 64), sizeof *lv->v);
        lv->v[lv->n++] = live_delta(&lv->last, &sc, now - lv->t0, dt);
    }
    lv->last = sc;
    lv->last_t = now;
    lv->have_last = 1;
    return 0;
}

/* Wait until a second after the previous scrape (the polling interval), then scrape. */
static int live_next(struct live *lv, double (*now)(void), char *err, size_t errlen)
{
    double wait = lv->last_t + 1.0 - now();
    struct timespec ts = {(time_t)wait, (long)((wait - floor(wait)) * 1e9)};
    if (wait > 0)
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
    return live_poll(lv, now(), err, errlen);
}

/* The model a live aggregator runs: carriers mean virtual threads. It tests which model,
 * outside the models: the aggregator's metrics tell its mode only by this. */
static int live_mode(const struct live *lv)
{
    return lv->last.carriers > 0 ? MODEL_VIRTUAL : MODEL_PLATFORM;
}

/* ==== Part V. Window ==== */

/* Tested by tests/test_ui.c (the panels' words and colours, text that is cut or overlaps in
 * every tutorial screenshot, stepping and rewinding, frames, sizes, the plots' axes, the
 * fonts --font takes). */

/* The animated window, headless screenshots and frame dumps share one drawing path, ui_draw.
 *
 * LAYOUT (everything scales with the output height; 1280x800 is scale 1)
 *   top bar      scenario, clock, speed, PAUSED, the colour legend
 *   two panels   platform left, virtual right; each station sits at the same height in both
 *                so the eye compares across:
 *                  arrivals  users -> dots in flight -> the queue for a thread
 *                  workers   a lane per OS thread (platform) or carrier (virtual), a heat
 *                            strip when lanes get too thin; below the carriers, the parking
 *                            lot of parked virtual threads, one column per service
 *                  cores     which thread runs on each of the C cores
 *                  services  calls in flight, the connection pool or the ephemeral ports
 *                  counters  throughput, latency, threads, memory, errors
 *   charts       one per time series, shared time axis, value ticks on both axes; each model
 *                in its own ink and dash (platform white, solid; virtual cyan, dashed)
 *   slider       the timeline: click or drag to re-simulate to that time
 *   status line  what the last event did, and the main keys
 *
 * DRAWING IS BATCHED
 *   No item is drawn with its own call. Drawing functions append to three lists: opaque
 *   rectangles, translucent shapes and lines (quads), and glyph quads, whose glyphs come
 *   from one atlas texture baked once per size with stbtt_PackFontRanges. ui_flush sends a
 *   layer as a few SDL_RenderFillRects calls (one per run of one colour, adjacent equal
 *   cells merged) and one SDL_RenderGeometry per quad list. A frame is two layers (the
 *   scene, then hover ring, card and help), whatever the load. Where items outnumber
 *   pixels a grid aggregates: a cell stands for k items, its colour is stronger the fuller
 *   it is, and the exact count is written beside it. Each model's requests are read once
 *   per frame (ui_scan_model), so 100,000 virtual threads cost a pass, not a pass per item.
 *
 * The window only reads the two models. Going back in time re-simulates from zero (a run is
 * deterministic); a step is one model_step on the model whose next event comes first. */

/* ---- V.1 Drawing context ---- */

/* The first UI_NLEGEND inks are states, shown in the legend and used the same way in both
 * panels (Okabe-Ito: safe for colour-blind readers). The rest are the theme. */
enum ui_ink {
    UI_RUN,
    UI_READY,
    UI_IO,
    UI_PINNED,
    UI_QUEUED,
    UI_CREATED,
    UI_IDLE,
    UI_FAILED,
    UI_NLEGEND,
    UI_BG = UI_NLEGEND,
    UI_PANEL,
    UI_TEXT,
    UI_DIM,
    UI_LINE,
    UI_ALERT,
    UI_MEASURED,
    UI_MEASURED2,
    UI_MODEL_INK, /* the models' inks in the window, UI_MODEL_INK + a model's words' ink */
    UI_MODEL_INK1,
    UI_NINKS
};

static const struct ui_ink_def {
    const char *legend;   /* label in the legend, NULL for theme inks */
    uint32_t dark, light; /* 0xRRGGBB per theme */
} ui_inks[UI_NINKS] = {
    [UI_RUN] = {"running", 0x009E73, 0x009E73},
    [UI_READY] = {"wants a core", 0xF0E442, 0xF0E442}, /* short: the title needs the room */
    [UI_IO] = {"blocked/parked on I/O", 0x56B4E9, 0x56B4E9},
    [UI_PINNED] = {"pinned", 0xD55E00, 0x9C2A00}, /* light: darker, or it reads as queued */
    [UI_QUEUED] = {"queued", 0xE69F00, 0xE69F00},
    [UI_CREATED] = {"new", 0xCC79A7, 0xCC79A7},
    [UI_IDLE] = {"idle", 0x999999, 0x999999},
    [UI_FAILED] = {"failed", 0x000000, 0x000000},
    [UI_BG] = {NULL, 0x16181d, 0xf2f2ee},
    [UI_PANEL] = {NULL, 0x20232a, 0xffffff},
    [UI_TEXT] = {NULL, 0xe6e6e6, 0x1c1c1c},
    [UI_DIM] = {NULL, 0x8d939c, 0x6b6b6b},
    [UI_LINE] = {NULL, 0x3b404a, 0xcfcfcf},
    [UI_ALERT] = {NULL, 0xff3b30, 0xd11a10},
    [UI_MEASURED] = {NULL, 0x0072B2, 0x0072B2},
    [UI_MEASURED2] = {NULL, 0xD55E00, 0xD55E00},
    [UI_MODEL_INK] = {NULL, 0xf4f4f4, 0x1c1c1c},  /* white (black): bright, no hue */
    [UI_MODEL_INK1] = {NULL, 0x2ee6d6, 0x007f86}, /* cyan (teal): a hue, apart in lightness */
};

/* ONE MEANING PER COLOUR, in the window and in every picture (--plot, --live):
 *   the legend's inks (UI_RUN .. UI_FAILED)  a thread's or request's state, in the panels only
 *   UI_MODEL_INK + its words' ink           a model's lines in the window's charts and its
 *                                           panel's title: platform white (black in the
 *                                           light theme) and solid, virtual cyan and dashed
 *   UI_TEXT lines                           the simulator's figures (predictions) in the
 *                                           pictures: platform solid, virtual dashed
 *   UI_DIM                                  what bounds or surrounds them: binding bounds,
 *                                           axes, 95% intervals' bands
 *   UI_MEASURED (Okabe-Ito blue)            a measurement of the real thing (--live, the
 *                                           port wall's timeline, --validate's points:
 *                                           platform filled, virtual hollow)
 *   UI_MEASURED2 (Okabe-Ito vermillion)     a second configuration's measurements, beside
 *                                           the first's blue (--validate's grid)
 *   UI_ALERT (red)                          failures, and the window's clock */

/* A thread's colour by state. A blocked carrier is pinned: its virtual thread could not
 * unmount, so the carrier is lost to everyone else. */
static const uint8_t ui_state_ink[THR_NSTATES] = {
    [THR_IDLE] = UI_IDLE,
    [THR_READY] = UI_READY,
    [THR_RUNNING] = UI_RUN,
    [THR_BLOCKED] = UI_IO,
};

/* Drawing context */

enum ui_font_id { UI_SMALL, UI_BIG, UI_NFONTS };
static const float ui_font_px[UI_NFONTS] = {13.0f, 16.0f}; /* at scale 1 */
#define UI_FIRST_CHAR 32
#define UI_NCHARS     95 /* printable ASCII */

struct ui_font {
    stbtt_packedchar ch[UI_NCHARS];
    float ascent, line, adv; /* pixels: baseline offset, line height, monospaced advance */
};

/* A growable array of vertices and their indices, sent with one SDL_RenderGeometry. */
struct ui_batch {
    SDL_Vertex *v;
    int *ix;
    int nv, ni, capv, capi;
};

/* What a drawn item is, so the mouse (and the tests) can find it again. */
enum ui_hit_type {
    UI_HIT_THREAD,
    UI_HIT_REQ,
    UI_HIT_CORE,
    UI_HIT_LEGEND,
    UI_HIT_COUNTERS,
    UI_HIT_LOT,
    UI_HIT_PANEL,
    UI_HIT_SLIDER,
    UI_HIT_LANES
};
struct ui_hit {
    SDL_FRect r;
    int8_t model, type; /* model -1 for items of neither */
    int32_t idx;        /* thread, request, core or ink index */
};

/* A string drawn this frame, where its ink is (its box without leading and trailing spaces):
 * what the layout's checks read (no text cut by a width, none over another). */
struct ui_text_item {
    SDL_FRect r;
    char s[80];
    int8_t font, cut; /* cut: ui_text_fit dropped characters to fit */
};

/* One pass over a model's request slots per frame (the loads reach 100,000 requests, so
 * the drawing reads its requests from here rather than scanning them again). */
#define UI_MAX_FLIGHTS 48
struct ui_scan {
    int32_t *parked, *tmp; /* parked requests, grouped by the service they wait for (a par()
                              request under each service it still waits for) */
    uint8_t *tmp_svc;      /* the service of tmp[i] */
    int32_t cap;
    long svc_first[MAX_SERVICES + 1]; /* parked[svc_first[s] .. svc_first[s + 1]) wait for s */
    int32_t recent[UI_MAX_FLIGHTS];   /* requests that arrived within the view's `travel` */
    int nrecent;
};

/* Options from the command line. */
struct ui_options {
    const char *font;  /* TTF path; NULL = DejaVu Sans Mono */
    int light;         /* light theme, for projectors */
    int width, height; /* window or image size in pixels, 0 = 1280x800 */
    double fps;        /* window frame cap, 0 = 60 */
    struct live *live; /* --live: a real aggregator polled beside the simulation, or NULL */
};
#define UI_DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"

struct ui_gfx {
    SDL_Renderer *r;
    SDL_Texture *atlas; /* every glyph of every size, white with alpha */
    int atlas_w, atlas_h;
    struct ui_font font[UI_NFONTS];
    unsigned char *ttf; /* the font file, kept to re-bake when the scale changes */
    const char *font_path;
    float scale, baked_scale; /* output height / 800, and the scale the atlas was baked at */
    int light;
    Uint32 target_format; /* pixel format drawn into, to match the atlas to it */
    SDL_FRect *rect;
    SDL_Color *rect_c;
    int nrect, caprect;            /* opaque rectangles, in order */
    struct ui_batch shade, glyphs; /* translucent shapes and lines; text */
    struct ui_hit *hit;
    int nhit, caphit;
    struct ui_text_item *text; /* this frame's strings; the first ntext_base under overlays */
    int ntext, captext, ntext_base;
    struct ui_scan *scan[MODEL_N]; /* this frame's pass over each model's requests */
    uint8_t *ink;
    int32_t *idx;
    long capscratch; /* items of one grid */
};

/* A thing on screen: a thread, a request or a core of one model. */
enum ui_pick_type {
    UI_PICK_NONE = -1,
    UI_PICK_THREAD = UI_HIT_THREAD,
    UI_PICK_REQ = UI_HIT_REQ,
    UI_PICK_CORE = UI_HIT_CORE
};
struct ui_pick {
    int8_t model, type;
    int32_t idx;
};
#define UI_NO_PICK ((struct ui_pick){-1, UI_PICK_NONE, -1})

/* Everything a frame shows besides the two models. */
struct ui_view {
    simtime t;      /* the shared clock */
    simtime travel; /* simulated time a new request's dot takes to reach the queue */
    double speed;   /* simulated seconds per wall second, 0 = as fast as possible */
    int paused, help;
    float mx, my;            /* mouse in output pixels; negative when not over the window */
    struct ui_pick pick;     /* clicked: its card stays open */
    struct ui_pick ring;     /* what the last step touched */
    double wall;             /* seconds, drives the bounce of refused requests */
    char status[200];        /* the narrated last event */
    const struct live *live; /* --live: measured series drawn over the charts, or NULL */
};

static SDL_Color ui_color(const struct ui_gfx *g, int ink, int alpha)
{
    uint32_t c = g->light ? ui_inks[ink].light : ui_inks[ink].dark;
    return (SDL_Color){(Uint8)(c >> 16), (Uint8)(c >> 8), (Uint8)c, (Uint8)alpha};
}

/* An opaque mix of two inks, f of the first in eighths: density cells are drawn opaque
 * (fast, and equal cells merge into one fill call) rather than blended. */
static SDL_Color ui_mix(const struct ui_gfx *g, int ink, int under, double f)
{
    SDL_Color a = ui_color(g, ink, 255), b = ui_color(g, under, 255);
    int k = (int)(f * 8 + 0.5);
    return (SDL_Color){(Uint8)((a.r * k + b.r * (8 - k)) / 8),
                       (Uint8)((a.g * k + b.g * (8 - k)) / 8),
                       (Uint8)((a.b * k + b.b * (8 - k)) / 8), 255};
}

/* Geometry batches */

static void ui_batch_quad(struct ui_batch *b, const SDL_FPoint p[4], const SDL_FPoint *uv,
                          SDL_Color c)
{
    static const int order[6] = {0, 1, 2, 0, 2, 3};
    if (b->nv + 4 > b->capv) {
        b->capv = b->capv ? 2 * b->capv : 8192;
        b->v = xrealloc(b->v, (size_t)b->capv, sizeof *b->v);
    }
    if (b->ni + 6 > b->capi) {
        b->capi = b->capi ? 2 * b->capi : 12288;
        b->ix = xrealloc(b->ix, (size_t)b->capi, sizeof *b->ix);
    }
    for (int k = 0; k < 4; k++)
        b->v[b->nv + k] = (SDL_Vertex){p[k], c, uv ? uv[k] : (SDL_FPoint){0, 0}};
    for (int k = 0; k < 6; k++)
        b->ix[b->ni++] = b->nv + order[k];
    b->nv += 4;
}

static void ui_rect(struct ui_gfx *g, float x, float y, float w, float h, SDL_Color c)
{
    if (w <= 0 || h <= 0)
        return;
    if (c.a == 255) {
        SDL_FRect *last = g->nrect ? &g->rect[g->nrect - 1] : NULL;
        if (last && last->y == y && last->h == h && last->x + last->w == x &&
            !memcmp(&g->rect_c[g->nrect - 1], &c, sizeof c)) {
            last->w += w; /* a run of equal cells (a full density grid) becomes one rectangle */
            return;
        }
        if (g->nrect == g->caprect) {
            g->caprect = g->caprect ? 2 * g->caprect : 4096;
            g->rect = xrealloc(g->rect, (size_t)g->caprect, sizeof *g->rect);
            g->rect_c = xrealloc(g->rect_c, (size_t)g->caprect, sizeof *g->rect_c);
        }
        g->rect[g->nrect] = (SDL_FRect){x, y, w, h};
        g->rect_c[g->nrect++] = c;
        return;
    }
    SDL_FPoint p[4] = {{x, y}, {x + w, y}, {x + w, y + h}, {x, y + h}};
    ui_batch_quad(&g->shade, p, NULL, c);
}

static void ui_fill(struct ui_gfx *g, SDL_FRect r, int ink)
{
    ui_rect(g, r.x, r.y, r.w, r.h, ui_color(g, ink, 255));
}

static void ui_outline(struct ui_gfx *g, SDL_FRect r, float t, SDL_Color c)
{
    ui_rect(g, r.x, r.y, r.w, t, c);
    ui_rect(g, r.x, r.y + r.h - t, r.w, t, c);
    ui_rect(g, r.x, r.y + t, t, r.h - 2 * t, c);
    ui_rect(g, r.x + r.w - t, r.y + t, t, r.h - 2 * t, c);
}

/* A segment as a thin quad, in the quad list: the chart lines cost no extra calls. */
static void ui_line(struct ui_gfx *g, float x0, float y0, float x1, float y1, float width,
                    SDL_Color c)
{
    float dx = x1 - x0, dy = y1 - y0, len = sqrtf(dx * dx + dy * dy);
    if (len < 1e-3f)
        return;
    float nx = -dy / len * width / 2, ny = dx / len * width / 2;
    SDL_FPoint p[4] = {
        {x0 + nx, y0 + ny}, {x1 + nx, y1 + ny}, {x1 - nx, y1 - ny}, {x0 - nx, y0 - ny}};
    ui_batch_quad(&g->shade, p, NULL, c);
}

/* Send what a layer drew: opaque rectangles, then translucent shapes and lines, then text.
 * Opaque rectangles go as SDL_RenderFillRects, one call per run of one colour (drawing order
 * kept), without blending: the software renderer then fills rows with wide stores instead
 * of blending each pixel, several times faster (RenderGeometry's quads would blend). */
static void ui_flush(struct ui_gfx *g)
{
    SDL_SetRenderDrawBlendMode(g->r, SDL_BLENDMODE_NONE);
    for (int i = 0, j; i < g->nrect; i = j) {
        SDL_Color c = g->rect_c[i];
        for (j = i + 1; j < g->nrect && !memcmp(&g->rect_c[j], &c, sizeof c); j++) {
        }
        SDL_SetRenderDrawColor(g->r, c.r, c.g, c.b, 255);
        SDL_RenderFillRectsF(g->r, g->rect + i, j - i);
    }
    g->nrect = 0;
    SDL_SetRenderDrawBlendMode(g->r, SDL_BLENDMODE_BLEND);
    struct ui_batch *b[2] = {&g->shade, &g->glyphs};
    SDL_Texture *tex[2] = {NULL, g->atlas};
    for (int i = 0; i < 2; i++) {
        if (b[i]->ni)
            SDL_RenderGeometry(g->r, tex[i], b[i]->v, b[i]->nv, b[i]->ix, b[i]->ni);
        b[i]->nv = b[i]->ni = 0;
    }
}

static void ui_hit_add(struct ui_gfx *g, SDL_FRect r, int model, int type, int32_t idx)
{
    if (g->nhit == g->caphit) {
        g->caphit = g->caphit ? 2 * g->caphit : 1024;
        g->hit = xrealloc(g->hit, (size_t)g->caphit, sizeof *g->hit);
    }
    g->hit[g->nhit++] = (struct ui_hit){r, (int8_t)model, (int8_t)type, idx};
}

/* The topmost hit of a type (or any type, -1) for a model (or any, -1) under a point. */
static const struct ui_hit *ui_hit_at(const struct ui_gfx *g, float x, float y, int type, int model)
{
    for (int i = g->nhit - 1; i >= 0; i--) {
        const struct ui_hit *h = &g->hit[i];
        if ((type < 0 || h->type == type) && (model < 0 || h->model == model) && x >= h->r.x &&
            x < h->r.x + h->r.w && y >= h->r.y && y < h->r.y + h->r.h)
            return h;
    }
    return NULL;
}

static const struct ui_hit *ui_hit_find(const struct ui_gfx *g, int model, int type, int32_t idx)
{
    for (int i = 0; i < g->nhit; i++)
        if (g->hit[i].model == model && g->hit[i].type == type && g->hit[i].idx == idx)
            return &g->hit[i];
    return NULL;
}

/* Text */

/* WHICH FONTS. stb_truetype trusts every offset and count in a font file (its header says
 * so: no guarantee on untrusted fonts); a font that lies makes it read past the file, loop or
 * assert. So --font takes only a font the system installed: a regular file, owned by root
 * and writable by no one else, under one of ui_font_dirs (its real path, links resolved),
 * that begins as a TrueType font or collection does. Such a file is as trusted as the
 * libraries sim runs on; a font from elsewhere is refused by name, never parsed. */
#define UI_FONT_MAX (64L << 20) /* bytes of a font file */
static const char *const ui_font_dirs[] = {"/usr/share/fonts/", "/usr/local/share/fonts/"};

/* Is this real path a root-owned font file in a system font directory? NULL, or why not. */
static const char *ui_font_untrusted(const char *real, const struct stat *st)
{
    int in_dir = 0;
    for (size_t i = 0; i < sizeof ui_font_dirs / sizeof ui_font_dirs[0]; i++)
        in_dir |= !strncmp(real, ui_font_dirs[i], strlen(ui_font_dirs[i]));
    if (!in_dir)
        return "not in the system's font directories (/usr/share/fonts, /usr/local/share/fonts)";
    if (st->st_uid != 0 || st->st_mode & (S_IWGRP | S_IWOTH))
        return "not installed by the system (owned by root, writable by no one else)";
    return NULL;
}

/* The font at path: read (a regular file of at most UI_FONT_MAX bytes, installed as
 * ui_font_untrusted asks) and starting with a TrueType or collection tag. Returns the
 * bytes, or NULL with "PATH: why" in err. */
static unsigned char *ui_font_load(const char *path, char *err, size_t errlen)
{
    static const char tags[][4] = {{0, 1, 0, 0}, {'t', 'r', 'u', 'e'}, {'t', 't', 'c', 'f'}};
    FILE *f = io_open_in(path, err, errlen);
    struct stat st;
    unsigned char *data = NULL;
    char real[PATH_MAX + 1] = "", link[64];
    const char *why = NULL;
    int tagged = 0;
    if (!f)
        return NULL;
    if (fstat(fileno(f), &st) < 0 || st.st_size < 12 || st.st_size > UI_FONT_MAX)
        snprintf(err, errlen, "%s: a font file of 12 bytes to %ld MiB, not %lld bytes", path,
                 UI_FONT_MAX >> 20, (long long)st.st_size);
    /* the file opened, as the kernel names it (links resolved, no race with a rename) */
    else if (snprintf(link, sizeof link, "/proc/self/fd/%d", fileno(f)) < 0 ||
             readlink(link, real, sizeof real - 1) < 0 || (why = ui_font_untrusted(real, &st)))
        snprintf(err, errlen, "%s: %s", path, why ? why : strerror(errno));
    else if (fread(data = xrealloc(NULL, (size_t)st.st_size, 1), 1, (size_t)st.st_size, f) !=
             (size_t)st.st_size)
        snprintf(err, errlen, "%s: cannot read: %s", path, ferror(f) ? strerror(errno) : "short");
    else {
        for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++)
            tagged |= !memcmp(data, tags[i], 4);
        if (tagged) {
            fclose(f);
            return data;
        }
        snprintf(err, errlen, "%s: not a TrueType font or collection", path);
    }
    free(data);
    fclose(f);
    return NULL;
}

/* The atlas in the byte order of the target (a software renderer then blits glyphs without
 * swapping channels), ARGB8888 or ABGR8888. Either way white with alpha a is the
 * same number, a << 24 | 0xffffff. */
static Uint32 ui_atlas_format(Uint32 target)
{
    return target == SDL_PIXELFORMAT_ABGR8888 || target == SDL_PIXELFORMAT_BGR888
               ? SDL_PIXELFORMAT_ABGR8888
               : SDL_PIXELFORMAT_ARGB8888;
}

/* Bake every size into one atlas for the current scale. Returns 0 or -1 with a message. */
static int ui_bake(struct ui_gfx *g)
{
    stbtt_fontinfo info;
    if (!stbtt_InitFont(&info, g->ttf, stbtt_GetFontOffsetForIndex(g->ttf, 0))) {
        fprintf(stderr, "sim: %s is not a TrueType font (pass --font PATH)\n", g->font_path);
        return -1;
    }
    for (int size = 256;; size *= 2) {
        unsigned char *bitmap = xrealloc(NULL, (size_t)size * size, 1);
        stbtt_pack_context pc;
        stbtt_pack_range ranges[UI_NFONTS];
        for (int f = 0; f < UI_NFONTS; f++)
            ranges[f] = (stbtt_pack_range){.font_size = ui_font_px[f] * g->scale,
                                           .first_unicode_codepoint_in_range = UI_FIRST_CHAR,
                                           .num_chars = UI_NCHARS,
                                           .chardata_for_range = g->font[f].ch};
        int ok = stbtt_PackBegin(&pc, bitmap, size, size, 0, 1, NULL);
        if (ok) {
            ok = stbtt_PackFontRanges(&pc, g->ttf, 0, ranges, UI_NFONTS);
            stbtt_PackEnd(&pc);
        }
        if (!ok && size < 4096) {
            free(bitmap);
            continue;
        }
        if (!ok) {
            free(bitmap);
            fprintf(stderr, "sim: cannot fit the glyphs of %s in a texture\n", g->font_path);
            return -1;
        }
        /* white RGBA with the glyph as alpha: the vertex colour tints it */
        uint32_t *rgba = xrealloc(NULL, (size_t)size * size, sizeof *rgba);
        for (long i = 0; i < (long)size * size; i++)
            rgba[i] = (uint32_t)bitmap[i] << 24 | 0xffffffu;
        free(bitmap);
        if (g->atlas)
            SDL_DestroyTexture(g->atlas);
        g->atlas = SDL_CreateTexture(g->r, ui_atlas_format(g->target_format),
                                     SDL_TEXTUREACCESS_STATIC, size, size);
        if (!g->atlas) {
            free(rgba);
            fprintf(stderr, "sim: font texture: %s\n", SDL_GetError());
            return -1;
        }
        SDL_UpdateTexture(g->atlas, NULL, rgba, size * 4);
        SDL_SetTextureBlendMode(g->atlas, SDL_BLENDMODE_BLEND);
        free(rgba);
        g->atlas_w = g->atlas_h = size;
        break;
    }
    for (int f = 0; f < UI_NFONTS; f++) {
        int asc, desc, gap;
        float px = ui_font_px[f] * g->scale, k = stbtt_ScaleForPixelHeight(&info, px);
        stbtt_GetFontVMetrics(&info, &asc, &desc, &gap);
        g->font[f].ascent = roundf((float)asc * k);
        g->font[f].line = roundf((float)(asc - desc + gap) * k);
        g->font[f].adv = g->font[f].ch['0' - UI_FIRST_CHAR].xadvance;
    }
    g->baked_scale = g->scale;
    return 0;
}

/* Note a string drawn at (x, y) in the frame's text log. */
static void ui_text_log(struct ui_gfx *g, int font, float x, float y, const char *s)
{
    size_t lead = strspn(s, " "), n = strlen(s);
    while (n > lead && s[n - 1] == ' ')
        n--;
    if (n == lead)
        return;
    if (g->ntext == g->captext) {
        g->captext = g->captext ? 2 * g->captext : 256;
        g->text = xrealloc(g->text, (size_t)g->captext, sizeof *g->text);
    }
    float adv = g->font[font].adv;
    struct ui_text_item *t = &g->text[g->ntext++];
    t->r = (SDL_FRect){roundf(x) + adv * (float)lead, roundf(y), adv * (float)(n - lead),
                       g->font[font].line};
    snprintf(t->s, sizeof t->s, "%.*s", (int)(n - lead), s + lead);
    t->font = (int8_t)font;
    t->cut = 0;
}

/* Draw a string with its top-left at (x, y); returns the x after it. */
static float ui_text(struct ui_gfx *g, int font, float x, float y, SDL_Color c, const char *s)
{
    const struct ui_font *f = &g->font[font];
    float bx = roundf(x), by = roundf(y) + f->ascent;
    ui_text_log(g, font, x, y, s);
    for (; *s; s++) {
        int ch = (unsigned char)*s;
        if (ch < UI_FIRST_CHAR || ch >= UI_FIRST_CHAR + UI_NCHARS)
            ch = '?';
        stbtt_aligned_quad glyph;
        stbtt_GetPackedQuad(f->ch, g->atlas_w, g->atlas_h, ch - UI_FIRST_CHAR, &bx, &by, &glyph, 1);
        if (ch == ' ')
            continue;
        SDL_FPoint p[4] = {
            {glyph.x0, glyph.y0}, {glyph.x1, glyph.y0}, {glyph.x1, glyph.y1}, {glyph.x0, glyph.y1}};
        SDL_FPoint uv[4] = {
            {glyph.s0, glyph.t0}, {glyph.s1, glyph.t0}, {glyph.s1, glyph.t1}, {glyph.s0, glyph.t1}};
        ui_batch_quad(&g->glyphs, p, uv, c);
    }
    return bx;
}

static float ui_textf(struct ui_gfx *g, int font, float x, float y, SDL_Color c, const char *fmt,
                      ...) __attribute__((format(printf, 6, 7)));
static float ui_textf(struct ui_gfx *g, int font, float x, float y, SDL_Color c, const char *fmt,
                      ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ui_text(g, font, x, y, c, buf);
}

/* Text cut to fit a width (the face is monospaced, so that is a count of characters). */
static float ui_text_fit(struct ui_gfx *g, int font, float x, float y, SDL_Color c, const char *s,
                         float maxw)
{
    char buf[256];
    int n = (int)(maxw / g->font[font].adv);
    snprintf(buf, sizeof buf, "%.*s", n < 0 ? 0 : n > 255 ? 255 : n, s);
    int before = g->ntext;
    float end = ui_text(g, font, x, y, c, buf);
    if (g->ntext > before && strlen(buf) < strlen(s))
        g->text[g->ntext - 1].cut = 1;
    return end;
}

/* The face is monospaced, so a width is a count of characters. */
static float ui_text_w(const struct ui_gfx *g, int font, const char *s)
{
    return g->font[font].adv * (float)strlen(s);
}

/* The first of n wordings (longest first) that fits maxw, or the last one cut to it. */
static float ui_text_choose(struct ui_gfx *g, int font, float x, float y, SDL_Color c, float maxw,
                            const char *const *say, int n)
{
    for (int i = 0; i < n - 1; i++)
        if (ui_text_w(g, font, say[i]) <= maxw)
            return ui_text(g, font, x, y, c, say[i]);
    return ui_text_fit(g, font, x, y, c, say[n - 1], maxw);
}

/* Setup */

static int ui_gfx_init(struct ui_gfx *g, SDL_Renderer *r, Uint32 target_format,
                       const struct ui_options *uo, int out_h)
{
    char err[512];
    memset(g, 0, sizeof *g);
    g->r = r;
    g->target_format = target_format;
    g->light = uo->light;
    g->font_path = uo->font ? uo->font : UI_DEFAULT_FONT;
    g->scale = (float)out_h / 800.0f;
    if (g->scale < 0.5f)
        g->scale = 0.5f;
    if (!(g->ttf = ui_font_load(g->font_path, err, sizeof err))) {
        fprintf(stderr, "sim: font %s (pass --font PATH to use another)\n", err);
        return -1;
    }
    SDL_SetRenderDrawBlendMode(r, SDL_BLENDMODE_BLEND);
    return ui_bake(g);
}

static void ui_gfx_free(struct ui_gfx *g)
{
    if (g->atlas)
        SDL_DestroyTexture(g->atlas);
    free(g->ttf);
    free(g->hit);
    free(g->text);
    free(g->rect);
    free(g->rect_c);
    struct ui_batch *b[] = {&g->shade, &g->glyphs};
    for (int i = 0; i < 2; i++)
        free(b[i]->v), free(b[i]->ix);
    for (int k = 0; k < MODEL_N; k++)
        if (g->scan[k]) {
            free(g->scan[k]->parked);
            free(g->scan[k]->tmp);
            free(g->scan[k]->tmp_svc);
            free(g->scan[k]);
        }
    free(g->ink);
    free(g->idx);
    memset(g, 0, sizeof *g);
}

/* A new output size: re-bake the glyphs only when the scale moved noticeably. */
static int ui_gfx_resize(struct ui_gfx *g, int out_h)
{
    float s = (float)out_h / 800.0f;
    g->scale = s < 0.5f ? 0.5f : s;
    if (fabsf(g->scale - g->baked_scale) < 0.05f * g->baked_scale) {
        g->scale = g->baked_scale;
        return 0;
    }
    return ui_bake(g);
}

/* ---- V.2 Reading the models ---- */

/* The window reads a model through model_ops (its words, its view) and the engine's view
 * (I.11: model_thread, model_request, model_narrate...), never through the model's arrays,
 * so the engine may store them as it likes and tells each event once. */

/* The parked request's service: what its current step calls first. */
/* A parked request that waits for no call (an io() step) goes under the first service. */
static int ui_parked_on_call(const struct model *m, const struct req *req)
{
    return req->pc < m->s->nsteps &&
           (m->s->prog[req->pc].op == OP_CALL || m->s->prog[req->pc].op == OP_PAR);
}

/* The frame's pass over m's request slots: the parked ones by service (a counting sort)
 * and the newest arrivals. It reads free slots too, on purpose: walking the free list to
 * skip them costs more than the pass, a freed slot is never `parked` (a request unparks
 * before it can end), and a freed slot that arrived recently did arrive. */
static void ui_scan_model(struct ui_gfx *g, const struct model *m, simtime travel)
{
    int k = m->id;
    if (!g->scan[k]) {
        g->scan[k] = xrealloc(NULL, 1, sizeof *g->scan[k]);
        memset(g->scan[k], 0, sizeof *g->scan[k]);
    }
    struct ui_scan *sc = g->scan[k];
    if (m->nreq + m->ncall > sc->cap) {
        sc->cap = (m->nreq + m->ncall) * 3 / 2;
        sc->parked = xrealloc(sc->parked, (size_t)sc->cap, sizeof *sc->parked);
        sc->tmp = xrealloc(sc->tmp, (size_t)sc->cap, sizeof *sc->tmp);
        sc->tmp_svc = xrealloc(sc->tmp_svc, (size_t)sc->cap, sizeof *sc->tmp_svc);
    }
    long count[MAX_SERVICES] = {0}, n = 0;
    sc->nrecent = 0;
    for (int32_t c = 0; c < m->ncall; c++) { /* each live call of a parked request */
        int svc;
        int32_t r = model_parked_call(m, c, &svc);
        if (r >= 0) {
            sc->tmp[n] = r;
            sc->tmp_svc[n++] = svc;
            count[svc]++;
        }
    }
    for (int32_t i = 0; i < m->nreq; i++) {
        const struct req *req = model_request(m, i);
        if (req->parked && !ui_parked_on_call(m, req)) {
            sc->tmp[n] = i;
            sc->tmp_svc[n++] = 0;
            count[0]++;
        }
        if (m->now - req->arrived < travel && req->arrived <= m->now &&
            sc->nrecent < UI_MAX_FLIGHTS)
            sc->recent[sc->nrecent++] = i;
    }
    sc->svc_first[0] = 0;
    for (int v = 0; v < MAX_SERVICES; v++)
        sc->svc_first[v + 1] = sc->svc_first[v] + count[v];
    long at[MAX_SERVICES];
    memcpy(at, sc->svc_first, sizeof at);
    for (long j = 0; j < n; j++)
        sc->parked[at[sc->tmp_svc[j]]++] = sc->tmp[j];
}

static void ui_scratch(struct ui_gfx *g, long n)
{
    if (n <= g->capscratch)
        return;
    g->capscratch = n + n / 2 + 256;
    g->ink = xrealloc(g->ink, (size_t)g->capscratch, 1);
    g->idx = xrealloc(g->idx, (size_t)g->capscratch, sizeof *g->idx);
}

static uint64_t ui_failed(const struct model *m)
{
    uint64_t n = 0;
    for (int k = 0; k < FAIL_N; k++)
        n += m->stats.failed[k];
    return n;
}

static int ui_thr_ink(const struct model *m, int32_t t)
{
    const struct thr *th = model_thread(m, t);
    if (m->ops->words->blocked_pins && th->state == THR_BLOCKED)
        return UI_PINNED;
    return ui_state_ink[th->state];
}

static int ui_req_ink(const struct model *m, int32_t r)
{
    const struct req *req = model_request(m, r);
    if (req->fail != FAIL_NONE)
        return UI_FAILED;
    if (req->parked)
        return UI_IO;
    if (model_holder(m, r) >= 0)
        return ui_thr_ink(m, model_holder(m, r));
    if (!m->ops->words->req_thread)
        return UI_QUEUED;
    return req->pc == 0 && req->phase == PH_START ? UI_CREATED
                                                  : UI_READY; /* never mounted yet: new */
}

/* Thread t's own run queue (virtual.scheduler steal or home), NULL if it has none. */
static const struct fifo *ui_thread_runq(const struct model *m, int32_t t)
{
    return m->ops->thread_runq(m, t);
}

static int32_t ui_thread_runq_len(const struct model *m, int32_t t)
{
    const struct fifo *q = ui_thread_runq(m, t);
    return q ? q->len : 0;
}

/* The words a panel uses for its model's threads, requests and queue (struct model_words). */
static const struct model_words *ui_words(const struct model *m)
{
    return m->ops->words;
}

static const char *ui_thr_prefix(const struct model *m)
{
    return ui_words(m)->thr_prefix;
}

static const char *ui_req_prefix(const struct model *m)
{
    return ui_words(m)->req_prefix;
}

/* The services the program calls, in declaration order: scn_defaults declares the default
 * program's services too, and a scenario with its own program never uses them. */
static int ui_used_services(const struct scenario *s, int out[MAX_SERVICES])
{
    int used[MAX_SERVICES] = {0}, n = 0;
    for (int i = 0; i < s->nsteps; i++)
        for (int k = 0; k < s->prog[i].nsvc; k++)
            used[s->prog[i].svc[k]] = 1;
    for (int i = 0; i < s->nsvc; i++)
        if (used[i])
            out[n++] = i;
    return n;
}

/* ---- V.3 Panels ---- */

/* Grids: many items, each a dot, or k items a cell */

struct ui_grid {
    SDL_FRect r;
    float cell, dot; /* cell pitch and the square drawn in it */
    int cols;
    long per; /* items per cell: 1, or more when items outnumber cells */
};

/* The largest cell up to max_cell that fits n items in r; below 2 px, cells aggregate. */
static struct ui_grid ui_grid_fit(SDL_FRect r, long n, float max_cell)
{
    struct ui_grid gr = {r, max_cell, 0, 1, 1};
    if (n < 1)
        n = 1;
    while (gr.cell > 2) {
        long cols = (long)(r.w / gr.cell), rows = (long)(r.h / gr.cell);
        if (cols * rows >= n)
            break;
        gr.cell = floorf(gr.cell * 0.85f);
    }
    if (gr.cell < 2)
        gr.cell = 2;
    gr.cols = (int)(r.w / gr.cell);
    if (gr.cols < 1)
        gr.cols = 1;
    long cells = (long)gr.cols * (long)(r.h / gr.cell);
    if (cells < 1)
        cells = 1;
    gr.per = (n + cells - 1) / cells;
    gr.dot =
        gr.cell >= 4 && gr.per == 1 ? gr.cell - 1 : gr.cell; /* gaps between single items only */
    return gr;
}

static SDL_FRect ui_inset(SDL_FRect r, float d)
{
    return (SDL_FRect){r.x + d, r.y + d, r.w - 2 * d, r.h - 2 * d};
}

static SDL_FRect ui_grid_cell(const struct ui_grid *gr, long c)
{
    return (SDL_FRect){gr->r.x + (float)(c % gr->cols) * gr->cell,
                       gr->r.y + (float)(c / gr->cols) * gr->cell, gr->dot, gr->dot};
}

/* A density grid of one ink: its full cells are whole rows, so a few rectangles. */
static void ui_grid_draw_uniform(struct ui_gfx *g, const struct ui_grid *gr, long n)
{
    long full = n / gr->per, rows = full / gr->cols, rest = full % gr->cols, part = n % gr->per;
    SDL_Color col = ui_mix(g, g->ink[0], UI_PANEL, 1);
    ui_rect(g, gr->r.x, gr->r.y, (float)gr->cols * gr->cell, (float)rows * gr->cell, col);
    ui_rect(g, gr->r.x, gr->r.y + (float)rows * gr->cell, (float)rest * gr->cell, gr->cell, col);
    if (part) {
        SDL_FRect c = ui_grid_cell(gr, full);
        ui_rect(g, c.x, c.y, c.w, c.h,
                ui_mix(g, g->ink[0], UI_PANEL, 0.3 + 0.7 * (double)part / (double)gr->per));
    }
}

/* Draw g->ink[0..n) as a grid on the panel. One item per cell: a solid dot (and a hit,
 * so it can be inspected). k per cell: the first item's colour, stronger the fuller it is. */
static void ui_grid_draw(struct ui_gfx *g, const struct ui_grid *gr, long n, int model,
                         int hit_type)
{
    if (gr->per > 1 && n > 1 && g->ink[0] != UI_FAILED &&
        !memcmp(g->ink, g->ink + 1, (size_t)n - 1)) { /* all one ink */
        ui_grid_draw_uniform(g, gr, n);
        return;
    }
    int last_ink = -1;
    long last_in = -1;
    SDL_Color col = {0, 0, 0, 255};
    for (long i = 0; i < n; i += gr->per) {
        long in = n - i < gr->per ? n - i : gr->per;
        SDL_FRect c = ui_grid_cell(gr, i / gr->per);
        int ink = g->ink[i];
        if (ink != last_ink || in != last_in) { /* mixing per cell would cost more than the fill */
            col = ui_mix(g, ink, UI_PANEL,
                         gr->per == 1 ? 1 : 0.3 + 0.7 * (double)in / (double)gr->per);
            last_ink = ink;
            last_in = in;
        }
        ui_rect(g, c.x, c.y, c.w, c.h, col);
        if (ink == UI_FAILED && c.w >= 4)
            ui_outline(g, c, 1, ui_color(g, UI_ALERT, 255));
        if (gr->per == 1 && gr->dot >= 3)
            ui_hit_add(g, c, model, hit_type, g->idx[i]);
    }
}

/* Time series: what the charts plot and the counters quote */

enum ui_field_type { UI_F64, UI_I32, UI_I64 };
/* Per-interval rates and percentiles jump with the waves of completions, so those charts
 * plot a mean over the last 0.5 s; a p99 of 0 means "no completion" and is skipped. */
enum ui_smooth { UI_RAW, UI_MEAN, UI_MEAN_NONZERO };
static const struct ui_chart {
    const char *title;
    size_t off;     /* field of struct sample */
    uint8_t type;   /* enum ui_field_type */
    double scale;   /* value shown = field * scale */
    uint8_t smooth; /* enum ui_smooth */
    int live_off;   /* --live: the measured field of struct live_sample drawn over it, -1 none */
    double live_scale;
} ui_charts[] = {
    {"req/s (0.5 s mean)", offsetof(struct sample, rps), UI_F64, 1, UI_MEAN,
     offsetof(struct live_sample, rps), 1},
    {"p99 latency ms", offsetof(struct sample, p99_ms), UI_F64, 1, UI_MEAN_NONZERO,
     offsetof(struct live_sample, p99_ms), 1},
    {"OS threads", offsetof(struct sample, os_threads), UI_I32, 1, UI_RAW,
     offsetof(struct live_sample, os_threads), 1},
    {"thread memory MiB", offsetof(struct sample, thread_mem), UI_I64, 1.0 / 1048576, UI_RAW,
     offsetof(struct live_sample, rss), 1.0 / 1048576}, /* measured: the whole RSS */
    {"ports in TIME_WAIT", offsetof(struct sample, ports_tw), UI_I32, 1, UI_RAW, -1, 0},
};
#define UI_NCHARTS (int)(sizeof ui_charts / sizeof ui_charts[0])

static double ui_sample_value(const struct sample *x, const struct ui_chart *c)
{
    const char *p = (const char *)x + c->off;
    double v = c->type == UI_F64   ? *(const double *)p
               : c->type == UI_I32 ? *(const int32_t *)p
                                   : (double)*(const int64_t *)p;
    return v * c->scale;
}

/* The value plotted at sample i, smoothed as the chart says. */
static double ui_plot_value(const struct model *m, const struct ui_chart *c, int i)
{
    if (c->smooth == UI_RAW)
        return ui_sample_value(&m->series[i], c);
    int k = (int)(SEC / 2 / m->s->sample_interval), n = 0;
    double sum = 0;
    for (int j = i; j >= 0 && j > i - (k > 1 ? k : 1); j--) {
        double y = ui_sample_value(&m->series[j], c);
        if (y > 0 || c->smooth == UI_MEAN) {
            sum += y;
            n++;
        }
    }
    return n ? sum / n : 0;
}

/* Panel stations */

/* The rectangles of one panel; both panels get the same heights. */
struct ui_panel_rects {
    SDL_FRect all, title, arrivals, workers, cores, services, counters;
};

static void ui_panel_layout(const struct ui_gfx *g, SDL_FRect p, struct ui_panel_rects *L)
{
    float S = g->scale, pad = 8 * S, x = p.x + pad, w = p.w - 2 * pad, y = p.y + 4 * S;
    float small = g->font[UI_SMALL].line, big = g->font[UI_BIG].line;
    L->all = p;
    L->title = (SDL_FRect){x, y, w, big + 2 * S};
    y += L->title.h;
    L->arrivals = (SDL_FRect){x, y, w, small + 24 * S};
    y += L->arrivals.h + 4 * S;
    float bottom = p.y + p.h - 4 * S;
    L->counters = (SDL_FRect){x, bottom - 2 * small - 4 * S, w, 2 * small + 4 * S};
    L->services = (SDL_FRect){x, L->counters.y - 2 * small - 12 * S, w, 2 * small + 8 * S};
    L->cores = (SDL_FRect){x, L->services.y - small - 10 * S, w, small + 6 * S};
    L->workers = (SDL_FRect){x, y, w, L->cores.y - 4 * S - y};
}

/* The requests of some FIFOs, in order, into the grid scratch; returns how many. */
static long ui_fifo_items(struct ui_gfx *g, const struct model *m, const struct fifo *const *fifos,
                          int nf)
{
    long n = 0, k = 0;
    for (int f = 0; f < nf; f++)
        n += fifos[f]->len;
    ui_scratch(g, n);
    for (int f = 0; f < nf; f++)
        for (int32_t i = fifos[f]->head; i >= 0 && k < n; i = model_fifo_next(m, i))
            g->ink[k] = (uint8_t)ui_req_ink(m, i), g->idx[k++] = i;
    return k;
}

/* The arrivals' box (struct model_view): its queues, then each thread's own run queue in
 * turn; for the virtual model, every runnable thread. */
static long ui_runq_items(struct ui_gfx *g, const struct model *m)
{
    struct model_view v;
    m->ops->view(m, &v);
    long n = ui_fifo_items(g, m, v.box, v.nbox), k = n;
    if (v.box_own == 0)
        return n;
    ui_scratch(g, n + v.box_own); /* keeps what is there */
    for (int32_t t = 0; t < m->nthr && k < n + v.box_own; t++) {
        const struct fifo *own = ui_thread_runq(m, t);
        for (int32_t i = own ? own->head : -1; i >= 0 && k < n + v.box_own;
             i = model_fifo_next(m, i))
            g->ink[k] = (uint8_t)ui_req_ink(m, i), g->idx[k++] = i;
    }
    return k;
}

/* Dots for the requests that arrived during the last `travel`, flying from the users to
 * the queue, and bouncing red-edged ones for recent failures. Both come from the models'
 * state, so a screenshot shows them too. */
static void ui_flights(struct ui_gfx *g, const struct model *m, const struct ui_view *v,
                       SDL_FRect r, float x0, float x1)
{
    float S = g->scale, y = r.y + r.h * 0.55f, d = 5 * S;
    const struct ui_scan *sc = g->scan[m->id];
    simtime travel = v->travel > 0 ? v->travel : 20 * MS;
    for (int j = 0; j < sc->nrecent; j++) {
        const struct req *req = model_request(m, sc->recent[j]);
        float f = (float)(m->now - req->arrived) / (float)travel;
        float jitter = (float)(req->id % 7) * 1.5f * S - 4.5f * S;
        ui_rect(g, x0 + f * (x1 - x0 - d), y + jitter - d / 2, d, d, ui_color(g, UI_QUEUED, 255));
    }
    /* failures in the last sample interval bounce back to the users */
    if (m->nseries >= 1) {
        uint64_t before = m->nseries >= 2 ? m->series[m->nseries - 2].failed : 0;
        uint64_t recent = m->series[m->nseries - 1].failed - before;
        for (uint64_t k = 0; k < recent && k < 6; k++) {
            float ph = (float)fmod(v->wall * 1.5 + (double)k / 6, 1.0);
            float bx = x1 - ph * (x1 - x0), by = r.y + 6 * S + 10 * S * (4 * ph * (1 - ph));
            SDL_FRect c = {bx, by, d + S, d + S};
            ui_fill(g, c, UI_FAILED);
            ui_outline(g, c, S, ui_color(g, UI_ALERT, 255));
        }
    }
}

/* users -> flights -> queue: the queue is a grid of its requests, then the accept backlog. */
static void ui_arrivals(struct ui_gfx *g, const struct model *m, const struct ui_view *v,
                        SDL_FRect r)
{
    float S = g->scale, small = g->font[UI_SMALL].line;
    SDL_Color text = ui_color(g, UI_TEXT, 255), dim = ui_color(g, UI_DIM, 255);
    const struct scenario *s = m->s;
    char who[48], failed[48] = "";
    if (s->users)
        snprintf(who, sizeof who, "%ld users", s->users);
    else
        snprintf(who, sizeof who, "%.0f/s in", s->rate);
    if (ui_failed(m))
        snprintf(failed, sizeof failed, "%" PRIu64 " failed", ui_failed(m));
    ui_text(g, UI_SMALL, r.x, r.y, text, who);
    ui_text(g, UI_SMALL, r.x, r.y + small, ui_color(g, UI_ALERT, 255), failed);
    float qx = r.x + r.w * 0.38f, arrow_y = r.y + r.h * 0.55f;
    float x0 = r.x + fmaxf(ui_text_w(g, UI_SMALL, who), ui_text_w(g, UI_SMALL, failed)) + 8 * S;
    ui_line(g, x0, arrow_y, qx - 4 * S, arrow_y, S, dim);
    ui_line(g, qx - 4 * S, arrow_y, qx - 9 * S, arrow_y - 4 * S, S, dim);
    ui_line(g, qx - 4 * S, arrow_y, qx - 9 * S, arrow_y + 4 * S, S, dim);
    ui_flights(g, m, v, r, x0 + 4 * S, qx);
    /* the queue the model shows here (struct model_view): the run queues (virtual); the
     * platform's executor queue has the big grid below its threads, so here it shows only
     * the kernel's accept backlog */
    struct model_view mv;
    m->ops->view(m, &mv);
    long n = ui_runq_items(g, m);
    ui_text(g, UI_SMALL, qx, r.y, text, mv.label);
    SDL_FRect box = {qx, r.y + small + 2 * S, r.w - (qx - r.x), r.h - small - 2 * S};
    ui_outline(g, box, S, ui_color(g, UI_LINE, 255));
    struct ui_grid gr = ui_grid_fit(ui_inset(box, 2 * S), n, 8 * S);
    ui_grid_draw(g, &gr, n, m->id, UI_HIT_REQ);
}

/* One lane: the thread's state colour across, its id, and the request it carries. */
static void ui_lane(struct ui_gfx *g, const struct model *m, int32_t t, SDL_FRect r, int text)
{
    const struct thr *th = model_thread(m, t);
    int32_t q = model_carried(m, t); /* the request it carries */
    float S = g->scale;
    ui_fill(g, r, ui_thr_ink(m, t));
    ui_hit_add(g, r, m->id, UI_HIT_THREAD, t);
    if (!text)
        return;
    SDL_Color ink = ui_color(g, UI_FAILED, 255); /* black reads on every state colour */
    float x = ui_textf(g, UI_SMALL, r.x + 4 * S, r.y + (r.h - g->font[UI_SMALL].line) / 2, ink,
                       "%s#%-4u %-8s", ui_thr_prefix(m), th->id, thr_state_names[th->state]);
    if (ui_thread_runq_len(m, t)) /* a carrier's own run queue (steal or home) */
        x = ui_textf(g, UI_SMALL, x, r.y + (r.h - g->font[UI_SMALL].line) / 2, ink, " +%d queued",
                     ui_thread_runq_len(m, t));
    if (q < 0)
        return;
    const struct req *req = model_request(m, q);
    char step[64];
    model_step_name(m->s, req->pc, step, sizeof step);
    ui_textf(g, UI_SMALL, x, r.y + (r.h - g->font[UI_SMALL].line) / 2, ink, " %s#%u %s%s  %.1f ms",
             ui_req_prefix(m), req->id, step, req->pinned ? " PINNED" : "",
             (double)(m->now - th->since) / 1e6);
}

/* Every alive thread: readable lanes while they fit, else a heat strip (a grid of cells). */
static void ui_threads(struct ui_gfx *g, const struct model *m, SDL_FRect r)
{
    float S = g->scale, need = g->font[UI_SMALL].line + 3 * S;
    long n = 0;
    ui_scratch(g, m->nthr);
    for (int32_t t = 0; t < m->nthr; t++)
        if (model_thread(m, t)->alive) {
            g->ink[n] = (uint8_t)ui_thr_ink(m, t);
            g->idx[n++] = t;
        }
    ui_hit_add(g, r, m->id, UI_HIT_LANES, -1);
    if (n && r.h / (float)n >= need) {
        float h = r.h / (float)n > 22 * S ? 22 * S : r.h / (float)n;
        for (long i = 0; i < n; i++)
            ui_lane(g, m, g->idx[i], (SDL_FRect){r.x, r.y + (float)i * h, r.w, h - S}, 1);
        return;
    }
    struct ui_grid gr = ui_grid_fit(r, n, 24 * S);
    if (gr.per == 1) { /* lanes too thin for text: each thread a cell, still inspectable */
        for (long i = 0; i < n; i++)
            ui_lane(g, m, g->idx[i], ui_grid_cell(&gr, i), 0);
        return;
    }
    ui_grid_draw(g, &gr, n, m->id, UI_HIT_THREAD);
}

/* Counts by state, written above the lanes: "200 threads: 196 blocked, 3 ready, 1 running". */
static void ui_thread_counts(struct ui_gfx *g, const struct model *m, float x, float y)
{
    char buf[160];
    int o = snprintf(buf, sizeof buf, "%d %s:", m->threads_alive, ui_words(m)->threads);
    for (int state = THR_NSTATES - 1; state >= 0; state--)
        if (m->thr_state_n[state])
            o += snprintf(buf + o, sizeof buf - (size_t)o, " %d %s", m->thr_state_n[state],
                          thr_state_names[state]);
    ui_text(g, UI_SMALL, x, y, ui_color(g, UI_TEXT, 255), buf);
}

/* The parking lot: one column per service, one dot per parked virtual thread (a density
 * grid past a few thousand), pinned ones stay on their carriers above. */
static void ui_lot(struct ui_gfx *g, const struct model *m, SDL_FRect r)
{
    const struct scenario *s = m->s;
    float S = g->scale, small = g->font[UI_SMALL].line;
    int svc[MAX_SERVICES], nsvc = ui_used_services(s, svc);
    const struct ui_scan *sc = g->scan[m->id];
    char count[32];
    struct model_view mv;
    m->ops->view(m, &mv);
    rep_human(count, sizeof count, mv.on_io, R_INT);
    ui_textf(g, UI_SMALL, r.x, r.y, ui_color(g, UI_TEXT, 255),
             "parking lot: %s virtual threads parked on I/O (off any carrier)", count);
    ui_hit_add(g, r, m->id, UI_HIT_LOT, -1);
    const char *none = nsvc ? NULL : "no calls: nothing parks"; /* a program without call() */
    if (!nsvc) {
        svc[0] = 0;
        nsvc = 1;
    }
    float cw = r.w / (float)nsvc;
    for (int col_i = 0; col_i < nsvc; col_i++) {
        int sv = svc[col_i];
        long first = sc->svc_first[sv], n = sc->svc_first[sv + 1] - first;
        ui_scratch(g, n);
        memset(g->ink, UI_IO, (size_t)n);
        memcpy(g->idx, sc->parked + first, (size_t)n * sizeof *g->idx);
        SDL_FRect col = {r.x + (float)col_i * cw, r.y + small + 2 * S, cw - 6 * S,
                         r.h - 2 * small - 4 * S};
        ui_outline(g, col, S, ui_color(g, UI_LINE, 255));
        struct ui_grid gr = ui_grid_fit(ui_inset(col, 2 * S), n, 7 * S);
        ui_grid_draw(g, &gr, n, m->id, UI_HIT_REQ);
        char count[32];
        rep_human(count, sizeof count, (double)n, R_INT);
        SDL_Color dim = ui_color(g, UI_DIM, 255);
        float x = ui_textf(g, UI_SMALL, col.x, col.y + col.h + S, dim, "%s %s",
                           none ? none : s->svc[sv].name, none ? "" : count);
        if (gr.per > 1)
            ui_textf(g, UI_SMALL, x, col.y + col.h + S, dim, " (density: up to %ld per cell)",
                     gr.per);
    }
}

/* The platform's twin of the parking lot: requests the executor queued because every
 * thread is taken. They hold no thread and make no progress. */
static void ui_queue_lot(struct ui_gfx *g, const struct model *m, SDL_FRect r)
{
    float S = g->scale, small = g->font[UI_SMALL].line;
    const struct fifo *queue = &m->queue;
    long n = ui_fifo_items(g, m, &queue, 1);
    char count[32];
    rep_human(count, sizeof count, (double)n, R_INT);
    ui_textf(g, UI_SMALL, r.x, r.y, ui_color(g, UI_TEXT, 255),
             "queue for a thread: %s requests wait, holding no thread", count);
    SDL_FRect box = {r.x, r.y + small + 2 * S, r.w, r.h - 2 * small - 4 * S};
    ui_hit_add(g, r, m->id, UI_HIT_LOT, -1);
    ui_outline(g, box, S, ui_color(g, UI_LINE, 255));
    struct ui_grid gr = ui_grid_fit(ui_inset(box, 2 * S), n, 7 * S);
    ui_grid_draw(g, &gr, n, m->id, UI_HIT_REQ);
    if (gr.per > 1)
        ui_textf(g, UI_SMALL, box.x, box.y + box.h + S, ui_color(g, UI_DIM, 255),
                 "(density: up to %ld per cell)", gr.per);
}

/* Threads on top, the lot of waiting requests below: the same split in both panels, so the
 * queued requests on the left face the parked virtual threads on the right. */
static void ui_workers(struct ui_gfx *g, const struct model *m, SDL_FRect r)
{
    float S = g->scale, small = g->font[UI_SMALL].line;
    ui_thread_counts(g, m, r.x, r.y);
    SDL_FRect lanes = {r.x, r.y + small + 2 * S, r.w, r.h - small - 2 * S};
    float h = lanes.h * 0.42f; /* a fixed split, so the two lots start at the same height */
    SDL_FRect lot = {r.x, lanes.y + h + 6 * S, r.w, lanes.h - h - 6 * S};
    if (ui_words(m)->parks)
        ui_lot(g, m, lot);
    else
        ui_queue_lot(g, m, lot);
    lanes.h = h;
    ui_threads(g, m, lanes);
}

static void ui_cores(struct ui_gfx *g, const struct model *m, SDL_FRect r)
{
    float S = g->scale, lw = ui_text_w(g, UI_SMALL, "cores "), w = (r.w - lw) / (float)m->s->cores;
    ui_text(g, UI_SMALL, r.x, r.y + 3 * S, ui_color(g, UI_TEXT, 255), "cores");
    for (int c = 0; c < m->s->cores; c++) {
        SDL_FRect box = {r.x + lw + (float)c * w, r.y, w - (w > 6 * S ? 3 * S : 0), r.h};
        int32_t t = model_on_core(m, c);
        ui_fill(g, box, t >= 0 ? UI_RUN : UI_IDLE);
        ui_hit_add(g, box, m->id, UI_HIT_CORE, c);
        char buf[48];
        if (t >= 0 && model_carried(m, t) >= 0)
            snprintf(buf, sizeof buf, "%d: %s#%u %s#%u", c, ui_thr_prefix(m),
                     model_thread(m, t)->id, ui_req_prefix(m),
                     model_request(m, model_carried(m, t))->id);
        else if (t >= 0)
            snprintf(buf, sizeof buf, "%d: %s#%u", c, ui_thr_prefix(m), model_thread(m, t)->id);
        else
            snprintf(buf, sizeof buf, "%d: idle", c);
        if (ui_text_w(g, UI_SMALL, buf) < box.w - 4 * S) /* black reads on both core colours */
            ui_text(g, UI_SMALL, box.x + 3 * S, box.y + 3 * S, ui_color(g, UI_FAILED, 255), buf);
    }
}

/* A bar of parts (value, ink) out of a total, on a track. */
static void ui_bar(struct ui_gfx *g, SDL_FRect r, double total, const double *part, const int *ink,
                   int n)
{
    ui_rect(g, r.x, r.y, r.w, r.h, ui_color(g, UI_LINE, 255));
    float x = r.x;
    for (int i = 0; i < n && total > 0; i++) {
        float w = (float)(part[i] / total) * r.w;
        if (x + w > r.x + r.w)
            w = r.x + r.w - x;
        ui_rect(g, x, r.y, w, r.h, ui_color(g, ink[i], 255));
        x += w;
    }
}

/* One column per service: calls in flight, then the pool (busy/open of its size) or,
 * without pooling, the ephemeral ports (open, TIME_WAIT) of the range. */
static void ui_services(struct ui_gfx *g, const struct model *m, SDL_FRect r)
{
    const struct scenario *s = m->s;
    float S = g->scale, small = g->font[UI_SMALL].line;
    SDL_Color text = ui_color(g, UI_TEXT, 255), dim = ui_color(g, UI_DIM, 255);
    int used[MAX_SERVICES], n = ui_used_services(s, used);
    if (!n) {
        ui_text(g, UI_SMALL, r.x, r.y, dim, "no downstream services");
        return;
    }
    float cw = r.w / (float)n;
    for (int col = 0; col < n; col++) {
        int i = used[col];
        const struct svc_state *v = &m->svc[i];
        const struct service_cfg *c = &s->svc[i];
        float x = r.x + (float)col * cw;
        char line1[96], say[3][96]; /* line 2, from the longest wording to the shortest */
        double part[2];
        int ink[2] = {UI_IO, UI_IDLE}, total;
        /* busy and idle keep-alive connections; the bar is the pool once it is near full */
        if (c->pool > 0) {
            part[0] = v->conns_busy;
            part[1] = v->conns_open - v->conns_busy;
            total = c->pool <= 2 * v->conns_open ? c->pool : (v->conns_open ? v->conns_open : 1);
            const char *wait = v->wait_conn.len ? ", calls wait" : "";
            snprintf(say[0], sizeof say[0], "connection pool %d/%d busy%s", v->conns_busy,
                     v->conns_open, wait);
            snprintf(say[1], sizeof say[1], "connections %d/%d busy%s", v->conns_busy,
                     v->conns_open, wait);
            snprintf(say[2], sizeof say[2], "conns %d/%d busy%s", v->conns_busy, v->conns_open,
                     v->wait_conn.len ? ", wait" : "");
        } else { /* a new connection per call: open ports and TIME_WAIT out of the range */
            char open[32], tw[32];
            part[0] = v->ports_open;
            part[1] = v->tw.len;
            ink[1] = UI_PINNED;
            total = s->port_high - s->port_low + 1;
            rep_human(open, sizeof open, v->ports_open, R_INT);
            rep_human(tw, sizeof tw, v->tw.len, R_INT);
            snprintf(say[0], sizeof say[0], "ports %s open, %s TIME_WAIT", open, tw);
            snprintf(say[1], sizeof say[1], "%s ports in TIME_WAIT", tw);
            snprintf(say[2], sizeof say[2], "%s TIME_WAIT", tw);
        }
        char calls[32];
        rep_human(calls, sizeof calls, (double)v->inflight, R_INT);
        snprintf(line1, sizeof line1, "%s: %s calls", c->name, calls);
        char limit[2][128]; /* with a limit: its permits in use, and the calls waiting */
        snprintf(limit[0], sizeof limit[0], "%s, permits %d/%d, %d wait", line1, v->in_service,
                 c->limit, v->wait_slot.len);
        snprintf(limit[1], sizeof limit[1], "%s, limit %d", line1, c->limit);
        const char *const line1s[] = {limit[0], limit[1], line1};
        if (c->limit > 0)
            ui_text_choose(g, UI_SMALL, x, r.y, text, cw - 6 * S, line1s, 3);
        else
            ui_text_fit(g, UI_SMALL, x, r.y, text, line1, cw - 6 * S);
        SDL_FRect bar = {x, r.y + small + 2 * S, cw - 10 * S, 6 * S};
        ui_bar(g, bar, total, part, ink, 2);
        const char *const line2[] = {say[0], say[1], say[2]};
        ui_text_choose(g, UI_SMALL, x, bar.y + bar.h + S, dim, cw - 6 * S, line2, 3);
    }
}

/* "12.3 MiB", "812 KiB": memory for people. */
static void ui_bytes(char *buf, size_t len, double b)
{
    if (b >= 1024.0 * 1048576)
        snprintf(buf, len, "%.2f GiB", b / (1024.0 * 1048576));
    else if (b >= 1048576)
        snprintf(buf, len, "%.1f MiB", b / 1048576);
    else
        snprintf(buf, len, "%.0f KiB", b / 1024);
}

static void ui_ms(char *buf, size_t len, double ms)
{
    if (ms >= 1000)
        snprintf(buf, len, "%.2f s", ms / 1000);
    else
        snprintf(buf, len, "%.1f ms", ms);
}

/* The counters, the same ones in the same place in both panels. Latency is over the
 * requests completed since warmup; before it, over the interval so far, or the last one. */
static void ui_counters(struct ui_gfx *g, const struct model *m, SDL_FRect r)
{
    const struct hist *h = m->stats.lat->count ? m->stats.lat : m->stats.lat_interval;
    char p50[24], p99[24] = "-", mem[24], rps[32], failed_s[32];
    /* no latency yet: before the warm-up ends (the report counts none of it), or none done */
    snprintf(p50, sizeof p50, "%s", m->now < m->s->warmup ? "- (warm-up)" : "- (none yet)");
    if (h->count) {
        ui_ms(p50, sizeof p50, (double)hist_quantile(h, 0.50) / 1e6);
        ui_ms(p99, sizeof p99, (double)hist_quantile(h, 0.99) / 1e6);
    } else if (m->nseries && m->series[m->nseries - 1].p99_ms > 0)
        ui_ms(p99, sizeof p99, m->series[m->nseries - 1].p99_ms);
    ui_bytes(mem, sizeof mem, (double)model_thread_mem(m));
    /* throughput as the chart shows it: the mean of the last 0.5 s */
    rep_human(rps, sizeof rps, m->nseries ? ui_plot_value(m, &ui_charts[0], m->nseries - 1) : 0,
              R_INT);
    uint64_t failed = ui_failed(m);
    float y2 = r.y + g->font[UI_SMALL].line + 2 * g->scale, adv = g->font[UI_SMALL].adv;
    ui_hit_add(g, r, m->id, UI_HIT_COUNTERS, -1);
    float x = ui_textf(g, UI_SMALL, r.x, r.y, ui_color(g, UI_TEXT, 255),
                       "%7s req/s  p50 %-9s p99 %-9s errors ", rps, p50, p99);
    rep_human(failed_s, sizeof failed_s, (double)failed, R_INT);
    x = ui_textf(g, UI_SMALL, x, r.y, ui_color(g, failed ? UI_ALERT : UI_TEXT, 255), "%-6s",
                 failed_s) +
        adv;
    /* the binding bound on throughput, as the report names it (IV.1) */
    struct bounds b;
    char bound[2][48];
    rep_bounds(m, &b);
    if (b.binding >= 0) {
        char rate[32];
        rep_human(rate, sizeof rate, b.rps[b.binding], R_INT);
        snprintf(bound[0], sizeof bound[0], "bound %s (%s)", rate, bound_keys[b.binding]);
        snprintf(bound[1], sizeof bound[1], "bound %s", rate);
        const char *const say[] = {bound[0], bound[1]};
        ui_text_choose(g, UI_SMALL, x, r.y, ui_color(g, UI_DIM, 255), r.x + r.w - x, say, 2);
    }
    /* waiting on I/O: blocked OS threads (platform), parked virtual threads (virtual) */
    char io[32], busy[32] = "-";
    struct model_view mv;
    m->ops->view(m, &mv);
    rep_human(io, sizeof io, mv.on_io, R_INT);
    if (mv.busy >= 0)
        snprintf(busy, sizeof busy, "%d/%d", mv.busy, m->threads_alive);
    ui_textf(g, UI_SMALL, r.x, y2, ui_color(g, UI_TEXT, 255),
             "OS threads %-5d on I/O %-8s carriers busy %-6s memory %s", model_os_threads(m), io,
             busy, mem);
}

static void ui_panel(struct ui_gfx *g, const struct model *m, const struct ui_view *v, SDL_FRect p)
{
    struct ui_panel_rects L;
    ui_panel_layout(g, p, &L);
    ui_hit_add(g, p, m->id, UI_HIT_PANEL, -1);
    ui_text(g, UI_BIG, L.title.x, L.title.y, ui_color(g, UI_MODEL_INK + ui_words(m)->ink, 255),
            ui_words(m)->title); /* in the ink of its lines in the charts below */
    ui_arrivals(g, m, v, L.arrivals);
    ui_workers(g, m, L.workers);
    ui_cores(g, m, L.cores);
    ui_services(g, m, L.services);
    ui_counters(g, m, L.counters);
}

/* ---- V.4 Charts ---- */

/* 1, 2 or 5 times a power of ten, at least v: axis maxima people can read. */
static double ui_nice(double v)
{
    if (v <= 0)
        return 1;
    double p = pow(10, floor(log10(v)));
    return v <= p ? p : v <= 2 * p ? 2 * p : v <= 5 * p ? 5 * p : 10 * p;
}

/* A dashed segment `width` wide: split into pieces of half a dash, every other dash drawn;
 * `run` is how far along its polyline it starts, so dashes continue across segments. */
static void ui_dash_w(struct ui_gfx *g, float x0, float y0, float x1, float y1, float dash,
                      float run, float width, SDL_Color ink)
{
    float len = sqrtf((x1 - x0) * (x1 - x0) + (y1 - y0) * (y1 - y0));
    for (float a = 0; a < len; a += dash / 2) {
        float b = a + dash / 2 < len ? a + dash / 2 : len;
        if (fmodf(run + a, 2 * dash) < dash)
            ui_line(g, x0 + (x1 - x0) * a / len, y0 + (y1 - y0) * a / len, x0 + (x1 - x0) * b / len,
                    y0 + (y1 - y0) * b / len, width, ink);
    }
}

/* The charts' dash: a line's width. */
static void ui_dash(struct ui_gfx *g, float x0, float y0, float x1, float y1, float dash, float run,
                    SDL_Color ink)
{
    ui_dash_w(g, x0, y0, x1, y1, dash, run, 1.6f * g->scale, ink);
}

/* The time the charts span at time t: the whole run, or while t is under 40% of a run of a
 * minute or more a round 1-2-5 time of at least 1.25 t and 10 s, so that what has happened
 * fills most of the chart rather than a sliver at its left (the slider spans the run). */
static simtime ui_chart_span(simtime duration, simtime t)
{
    double want = fmax(1.25 * (double)t, 10.0 * SEC);
    if (duration < 60 * SEC || 10 * t >= 4 * duration || want >= (double)duration)
        return duration;
    double span = ui_nice(want / SEC) * SEC;
    return span < (double)duration ? (simtime)span : duration;
}

/* A model's series as a polyline, over [0, span], in its ink; dashed (its words say) draws
 * every other 6-pixel stretch. Two cues, hue and dash, so either alone tells them apart. */
static void ui_plot(struct ui_gfx *g, const struct model *m, const struct ui_chart *c, SDL_FRect r,
                    double ymax, simtime span)
{
    const struct model_words *w = ui_words(m);
    SDL_Color ink = ui_color(g, UI_MODEL_INK + w->ink, 255);
    int dashed = w->dashed;
    double dur = (double)span;
    int step = m->nseries / (int)(r.w / 2 + 1) + 1; /* no more than a point per 2 pixels */
    float px = 0, py = 0, run = 0, dash = 6 * g->scale;
    for (int i = 0; i < m->nseries && m->series[i].t <= span; i += step) {
        const struct sample *x = &m->series[i];
        float X = r.x + (float)((double)x->t / dur) * r.w,
              Y = r.y + r.h - (float)(ui_plot_value(m, c, i) / ymax) * r.h;
        if (i > 0) {
            float len = sqrtf((X - px) * (X - px) + (Y - py) * (Y - py));
            if (!dashed)
                ui_line(g, px, py, X, Y, 1.6f * g->scale, ink);
            else
                ui_dash(g, px, py, X, Y, dash, run, ink);
            run += len;
        }
        px = X;
        py = Y;
    }
}

/* "-- platform - - virtual" under a chart, centred, if it fits: each model's name beside a
 * piece of its line, both in its ink. */
static void ui_chart_key(struct ui_gfx *g, const struct model ms[MODEL_N], SDL_FRect r, float y)
{
    float S = g->scale, seg = 14 * S, gap = 2 * g->font[UI_SMALL].adv, w = -gap;
    for (int k = 0; k < MODEL_N; k++)
        w += seg + 3 * S + ui_text_w(g, UI_SMALL, model_names[ms[k].id]) + gap;
    if (w > r.w)
        return;
    float x = r.x + (r.w - w) / 2, ly = y + g->font[UI_SMALL].line / 2;
    for (int k = 0; k < MODEL_N; k++) {
        const struct model_words *mw = ui_words(&ms[k]);
        SDL_Color ink = ui_color(g, UI_MODEL_INK + mw->ink, 255);
        for (float a = 0; a < seg; a += mw->dashed ? 6 * S : seg)
            ui_line(g, x + a, ly, x + a + (mw->dashed ? 3 * S : seg), ly, 1.6f * S, ink);
        x = ui_text(g, UI_SMALL, x + seg + 3 * S, y, ink, model_names[ms[k].id]) + gap;
    }
}

/* A tick's label: 3 significant digits, thousands as k and millions as M (2000 -> 2k). */
static void ui_tick_label(char *buf, size_t len, double v)
{
    double a = fabs(v);
    if (a >= 1e6)
        snprintf(buf, len, "%gM", v / 1e6);
    else if (a >= 1e4 || (a >= 1e3 && fmod(a, 100) == 0))
        snprintf(buf, len, "%gk", v / 1e3);
    else
        snprintf(buf, len, "%.3g", v);
}

/* The value axis: a faint gridline and a label, right-aligned left of the plot, at each
 * multiple of a 1-2-5 step that makes 3 to 5 ticks from 0 to ymax (itself 1-2-5). With
 * draw 0 it only measures: returns the widest label's width, the gutter they need. */
static float ui_chart_yticks(struct ui_gfx *g, SDL_FRect plot, double ymax, int draw)
{
    float S = g->scale, half = g->font[UI_SMALL].line / 2, widest = 0;
    double step = ui_nice(ymax / 4);
    for (int k = 0; k * step <= ymax * (1 + 1e-9); k++) {
        char lab[24];
        ui_tick_label(lab, sizeof lab, k * step);
        float y = plot.y + plot.h - (float)(k * step / ymax) * plot.h,
              w = ui_text_w(g, UI_SMALL, lab);
        widest = fmaxf(widest, w);
        if (draw && k > 0)
            ui_rect(g, plot.x, y, plot.w, S, ui_color(g, UI_LINE, 128));
        if (draw) /* centred on its gridline, but none below the time axis's labels' row */
            ui_text(g, UI_SMALL, plot.x - 4 * S - w, fminf(y - half, plot.y + plot.h - 2 * half),
                    ui_color(g, UI_DIM, 255), lab);
    }
    return widest;
}

/* The time axis: a tick and a label at each multiple of a 1-2-5 step of 2 to 5 ticks over
 * the span, the first label starting at the axis's start, the last ending at its end. */
static void ui_chart_tticks(struct ui_gfx *g, SDL_FRect plot, simtime span)
{
    float S = g->scale, y = plot.y + plot.h;
    double secs = (double)span / SEC, step = ui_nice(secs / 4);
    char end[24];
    snprintf(end, sizeof end, "%g s", secs);
    /* between two ticks: a label and a gap, and half a label more where the last label,
     * ending at the axis's end rather than centred on it, comes nearer its neighbour */
    float room = 1.5f * ui_text_w(g, UI_SMALL, end) + g->font[UI_SMALL].adv;
    while (secs / step * room > plot.w && step < secs)
        step = ui_nice(1.5 * step); /* the next 1-2-5 step up: fewer, wider apart */
    for (int k = 0; k * step <= secs * (1 + 1e-9); k++) {
        char lab[24];
        snprintf(lab, sizeof lab, "%g s", k * step);
        float x = plot.x + (float)(k * step / secs) * plot.w, w = ui_text_w(g, UI_SMALL, lab);
        float lx = fminf(fmaxf(x - w / 2, plot.x), plot.x + plot.w - w);
        ui_rect(g, x, y, S, 3 * S, ui_color(g, UI_LINE, 255));
        ui_text(g, UI_SMALL, lx, y + 3 * S, ui_color(g, UI_DIM, 255), lab);
    }
}

static double ui_live_value(const struct live *lv, const struct ui_chart *c, int i)
{
    return *(const double *)((const char *)&lv->v[i] + c->live_off) * c->live_scale;
}

/* --live: the measured series as a thick line in the measured blue, over the predictions. */
static void ui_plot_live(struct ui_gfx *g, const struct live *lv, const struct ui_chart *c,
                         SDL_FRect r, double ymax, simtime dur)
{
    SDL_Color ink = ui_color(g, UI_MEASURED, 255);
    for (int i = 1; i < lv->n; i++) {
        float x0 = r.x + (float)(lv->v[i - 1].t * SEC / (double)dur) * r.w,
              x1 = r.x + (float)(lv->v[i].t * SEC / (double)dur) * r.w;
        float y0 = r.y + r.h - (float)(ui_live_value(lv, c, i - 1) / ymax) * r.h;
        float y1 = r.y + r.h - (float)(ui_live_value(lv, c, i) / ymax) * r.h;
        if (x1 <= r.x + r.w)
            ui_line(g, x0, y0, x1, y1, 3 * g->scale, ink);
    }
}

static void ui_chart(struct ui_gfx *g, const struct model ms[MODEL_N], const struct ui_chart *c,
                     SDL_FRect r, const struct ui_view *v)
{
    simtime t = v->t;
    const struct live *lv = c->live_off >= 0 ? v->live : NULL;
    float S = g->scale, small = g->font[UI_SMALL].line;
    SDL_FRect plot = {r.x + 6 * S, r.y + 1.5f * small + 4 * S, r.w - 12 * S,
                      r.h - 3.5f * small - 12 * S};
    double ymax = 0;
    for (int k = 0; k < MODEL_N; k++)
        for (int i = 0, step = ms[k].nseries / (int)(plot.w / 2 + 1) + 1; i < ms[k].nseries;
             i += step) {
            double y = ui_plot_value(&ms[k], c, i);
            if (y > ymax)
                ymax = y;
        }
    for (int i = 0; lv && i < lv->n; i++)
        if (ui_live_value(lv, c, i) > ymax)
            ymax = ui_live_value(lv, c, i);
    ymax = ui_nice(ymax);
    float gutter = ui_chart_yticks(g, plot, ymax, 0) + 6 * S;
    plot.x += gutter;
    plot.w -= gutter;
    ui_text(g, UI_SMALL, r.x + 6 * S, r.y + 2 * S, ui_color(g, UI_TEXT, 255), c->title);
    ui_chart_yticks(g, plot, ymax, 1);
    ui_rect(g, plot.x, plot.y + plot.h, plot.w, S, ui_color(g, UI_LINE, 255));
    simtime span = ui_chart_span(ms[0].s->duration, t);
    ui_chart_tticks(g, plot, span);
    for (int k = 0; k < MODEL_N; k++)
        ui_plot(g, &ms[k], c, plot, ymax, span);
    if (lv)
        ui_plot_live(g, lv, c, plot, ymax, span);
    float cx = plot.x + (float)((double)t / (double)span) * plot.w;
    ui_rect(g, cx, plot.y, S, plot.h, ui_color(g, UI_ALERT, 160));
    ui_chart_key(g, ms, (SDL_FRect){r.x + 6 * S, 0, r.w - 12 * S, 0},
                 plot.y + plot.h + 3 * S + small);
}

/* ---- V.5 The frame ---- */

/* Bars, overlays and the whole frame */

struct ui_layout {
    SDL_FRect top, panel[MODEL_N], charts, chart[16], slider, status;
};

static void ui_layout(const struct ui_gfx *g, int w, int h, struct ui_layout *L)
{
    float S = g->scale, gap = 6 * S, W = (float)w, H = (float)h, small = g->font[UI_SMALL].line;
    L->top = (SDL_FRect){0, 0, W, g->font[UI_BIG].line + 10 * S};
    L->status = (SDL_FRect){0, H - small - 8 * S, W, small + 8 * S};
    L->slider = (SDL_FRect){gap, L->status.y - 12 * S, W - 2 * gap, 8 * S};
    float charts_h = H * 0.2f;
    L->charts = (SDL_FRect){gap, L->slider.y - gap - charts_h, W - 2 * gap, charts_h};
    float py = L->top.h + gap, ph = L->charts.y - gap - py, pw = (W - 3 * gap) / 2;
    for (int k = 0; k < MODEL_N; k++)
        L->panel[k] = (SDL_FRect){gap + (float)k * (pw + gap), py, pw, ph};
    float cw = (L->charts.w - (float)(UI_NCHARTS - 1) * gap) / UI_NCHARTS;
    for (int i = 0; i < UI_NCHARTS; i++)
        L->chart[i] =
            (SDL_FRect){L->charts.x + (float)i * (cw + gap), L->charts.y, cw, L->charts.h};
}

/* The frame is cleared to the panel colour (most of its area) and only the gaps around
 * panels and charts are filled with the background: each pixel is written about once,
 * which is what the software renderer's time is made of. */
static void ui_background(struct ui_gfx *g, const struct ui_layout *L, float w)
{
    SDL_Color bg = ui_color(g, UI_BG, 255);
    const SDL_FRect *p = L->panel, *c = L->chart, *last = &L->chart[UI_NCHARTS - 1];
    ui_rect(g, 0, 0, w, p[0].y, bg);
    ui_rect(g, 0, p[0].y + p[0].h, w, c[0].y - (p[0].y + p[0].h), bg);
    ui_rect(g, 0, c[0].y + c[0].h, w, L->status.y - (c[0].y + c[0].h), bg);
    ui_rect(g, 0, p[0].y, p[0].x, p[0].h, bg);
    ui_rect(g, p[0].x + p[0].w, p[0].y, p[1].x - (p[0].x + p[0].w), p[0].h, bg);
    ui_rect(g, p[1].x + p[1].w, p[1].y, w - (p[1].x + p[1].w), p[1].h, bg);
    ui_rect(g, 0, c[0].y, c[0].x, c[0].h, bg);
    for (int i = 0; i + 1 < UI_NCHARTS; i++)
        ui_rect(g, c[i].x + c[i].w, c[i].y, c[i + 1].x - (c[i].x + c[i].w), c[i].h, bg);
    ui_rect(g, last->x + last->w, last->y, w - (last->x + last->w), last->h, bg);
}

/* The legend, right-aligned: a swatch and a label per state. Returns its left edge. */
static float ui_legend(struct ui_gfx *g, float right, float y)
{
    float S = g->scale, lx = right, sw = 10 * S;
    for (int i = UI_NLEGEND - 1; i >= 0; i--) {
        lx -= ui_text_w(g, UI_SMALL, ui_inks[i].legend) + sw + 10 * S;
        SDL_FRect box = {lx, y + 2 * S, sw, sw};
        ui_fill(g, box, i);
        if (i == UI_FAILED)
            ui_outline(g, box, S, ui_color(g, UI_ALERT, 255));
        ui_hit_add(g, box, -1, UI_HIT_LEGEND, i);
        ui_text(g, UI_SMALL, lx + sw + 4 * S, y, ui_color(g, UI_TEXT, 255), ui_inks[i].legend);
    }
    return lx;
}

/* Clock, speed and PAUSED first; the scenario's name gets what room the legend leaves, in
 * the big font if it fits there, else in the small one (a long name at 1280x800 was cut to
 * "Pinning: synchronized around bloc"). Returns the room left after the name: below 0, the
 * name was cut. */
static float ui_top_bar(struct ui_gfx *g, const struct model ms[MODEL_N], const struct ui_view *v,
                        SDL_FRect r)
{
    float S = g->scale, y = r.y + 5 * S;
    float left =
        ui_legend(g, r.x + r.w - 8 * S, y + (g->font[UI_BIG].line - g->font[UI_SMALL].line) / 2);
    char clock[96];
    int o = snprintf(clock, sizeof clock, "t = %.3f s   ", (double)v->t / SEC);
    if (v->speed <= 0)
        snprintf(clock + o, sizeof clock - (size_t)o, "as fast as possible");
    else
        snprintf(clock + o, sizeof clock - (size_t)o, "speed x%g", v->speed);
    float x = ui_text(g, UI_BIG, r.x + 8 * S, y, ui_color(g, UI_TEXT, 255), clock);
    if (v->paused)
        x = ui_text(g, UI_BIG, x + 12 * S, y, ui_color(g, UI_ALERT, 255), "PAUSED");
    const char *name = ms[0].s->name;
    float room = left - x - 36 * S;
    int font = ui_text_w(g, UI_BIG, name) <= room ? UI_BIG : UI_SMALL;
    float dy = font == UI_BIG ? 0 : (g->font[UI_BIG].line - g->font[UI_SMALL].line) / 2;
    ui_text_fit(g, font, x + 24 * S, y + dy, ui_color(g, UI_DIM, 255), name, room);
    return room - ui_text_w(g, font, name);
}

static void ui_slider(struct ui_gfx *g, const struct ui_view *v, simtime dur, SDL_FRect r)
{
    float f = (float)((double)v->t / (double)dur);
    ui_rect(g, r.x, r.y + r.h / 3, r.w, r.h / 3, ui_color(g, UI_LINE, 255));
    ui_rect(g, r.x, r.y + r.h / 3, r.w * f, r.h / 3, ui_color(g, UI_DIM, 255));
    ui_rect(g, r.x + r.w * f - r.h / 2, r.y, r.h, r.h, ui_color(g, UI_TEXT, 255));
    ui_hit_add(g, r, -1, UI_HIT_SLIDER, -1);
}

static const char ui_hints[] =
    "[space] run  [->] 1 event  [shift ->] next done  [<-] 100 ms back  [+/-] speed  [h] help";

/* The narration, and the main keys when there is room for both (the narration wins). */
static void ui_status(struct ui_gfx *g, const struct ui_view *v, SDL_FRect r)
{
    float S = g->scale, adv = g->font[UI_SMALL].adv, hw = ui_text_w(g, UI_SMALL, ui_hints);
    int fits = (float)strlen(v->status) * adv < r.w - hw - 24 * S;
    if (fits)
        ui_text(g, UI_SMALL, r.w - hw - 8 * S, r.y + 4 * S, ui_color(g, UI_DIM, 255), ui_hints);
    ui_text_fit(g, UI_SMALL, r.x + 8 * S, r.y + 4 * S, ui_color(g, UI_TEXT, 255), v->status,
                r.w - 16 * S);
}

/* --live: the latest measurement in words, for the status line. */
static void ui_live_status(struct ui_view *v, const struct live *lv)
{
    if (!lv->n) {
        snprintf(v->status, sizeof v->status, "LIVE: waiting for the first interval");
        return;
    }
    const struct live_sample *x = &lv->v[lv->n - 1];
    snprintf(v->status, sizeof v->status,
             "LIVE %s mode, t=%.0f s: %.0f req/s, p99 %.1f ms, %.0f threads, %.0f parked, RSS %.1f "
             "MiB (thick blue: measured)",
             model_names[live_mode(lv)], x->t, x->rps, x->p99_ms, x->os_threads, x->vt_parked,
             x->rss / 1048576);
}

/* A ring around what the last step touched: a request's dot, or the lane carrying it. */
static void ui_ring(struct ui_gfx *g, const struct model ms[MODEL_N], struct ui_pick p)
{
    if (p.model < 0 || p.type == UI_PICK_NONE)
        return;
    const struct ui_hit *h = ui_hit_find(g, p.model, p.type, p.idx);
    if (!h && p.type == UI_PICK_REQ && model_live(&ms[p.model], p.idx) &&
        model_holder(&ms[p.model], p.idx) >= 0)
        h = ui_hit_find(g, p.model, UI_HIT_THREAD, model_holder(&ms[p.model], p.idx));
    if (!h)
        return;
    float S = g->scale;
    SDL_FRect r = {h->r.x - 3 * S, h->r.y - 3 * S, h->r.w + 6 * S, h->r.h + 6 * S};
    ui_outline(g, r, 2 * S, ui_color(g, UI_ALERT, 255));
}

/* The lines of an inspect card for a pick; returns how many. */
static int ui_card_lines(const struct model *m, struct ui_pick p, char lines[][96], int max)
{
    int n = 0;
    int32_t r = -1;
    if (p.type == UI_PICK_CORE) {
        int32_t t = model_on_core(m, p.idx);
        snprintf(lines[n++], 96, "core %d: %s", p.idx, t >= 0 ? "busy" : "idle");
        if (t < 0)
            return n;
        p.type = UI_PICK_THREAD;
        p.idx = t;
    }
    if (p.type == UI_PICK_THREAD) {
        const struct thr *th = model_thread(m, p.idx);
        if (!th->alive)
            return n;
        snprintf(lines[n++], 96, "%s#%u  %s %s for %.2f ms", ui_thr_prefix(m), th->id,
                 ui_words(m)->thread, thr_state_names[th->state],
                 (double)(m->now - th->since) / 1e6);
        int o = snprintf(lines[n], 96, "created at t=%.3f s, %u requests finished",
                         (double)th->born / SEC, th->served);
        if (th->core >= 0)
            o += snprintf(lines[n] + o, (size_t)(96 - o), ", on core %d", th->core);
        if (ui_thread_runq_len(m, p.idx) && o < 96)
            snprintf(lines[n] + o, (size_t)(96 - o), ", %d in its run queue",
                     ui_thread_runq_len(m, p.idx));
        n++;
        r = model_carried(m, p.idx);
    } else if (p.type == UI_PICK_REQ)
        r = p.idx;
    if (!model_live(m, r) || n + 3 > max)
        return n;
    const struct req *req = model_request(m, r);
    char step[64], doing[96];
    model_step_name(m->s, req->pc, step, sizeof step);
    model_req_doing(m, r, doing, sizeof doing);
    snprintf(lines[n++], 96, "%s#%u  age %.2f ms", ui_req_prefix(m), req->id,
             (double)(m->now - req->arrived) / 1e6);
    snprintf(lines[n++], 96, "step %d of %d: %.40s", req->pc + 1, m->s->nsteps, step);
    snprintf(lines[n++], 96, "%.95s", doing);
    if (n < max && req->pc > 0) { /* its history: the steps it has done, oldest first */
        int o = snprintf(lines[n], 96, "done:");
        for (int i = 0; i < req->pc && o < 90; i++) {
            model_step_name(m->s, i, step, sizeof step);
            o += snprintf(lines[n] + o, (size_t)(96 - o), " %s", step);
        }
        n++;
    }
    return n;
}

static void ui_card(struct ui_gfx *g, const struct model ms[MODEL_N], struct ui_pick p, float x,
                    float y, int w, int h)
{
    if (p.model < 0 || p.type == UI_PICK_NONE)
        return;
    char lines[7][96];
    int n = ui_card_lines(&ms[p.model], p, lines, 7);
    if (!n)
        return;
    float S = g->scale, lh = g->font[UI_SMALL].line, cw = 0;
    for (int i = 0; i < n; i++)
        cw = fmaxf(cw, ui_text_w(g, UI_SMALL, lines[i]));
    SDL_FRect r = {x + 14 * S, y + 14 * S, cw + 16 * S, (float)n * lh + 12 * S};
    if (r.x + r.w > (float)w)
        r.x = x - r.w - 8 * S;
    if (r.y + r.h > (float)h)
        r.y = y - r.h - 8 * S;
    ui_fill(g, r, UI_BG);
    ui_outline(g, r, S, ui_color(g, UI_TEXT, 255));
    for (int i = 0; i < n; i++)
        ui_text(g, UI_SMALL, r.x + 8 * S, r.y + 6 * S + (float)i * lh, ui_color(g, UI_TEXT, 255),
                lines[i]);
}

/* The key table lives with the window loop; the help overlay reads its names. */
struct ui_key;
static const struct ui_key *ui_key_row(int i, const char **keys, const char **help);

static void ui_help(struct ui_gfx *g, int w, int h)
{
    float S = g->scale, lh = g->font[UI_SMALL].line + 2 * S;
    const char *keys, *help;
    int n = 0;
    while (ui_key_row(n, &keys, &help))
        n++;
    SDL_FRect r = {(float)w * 0.25f, (float)h * 0.15f, (float)w * 0.5f, (float)(n + 7) * lh};
    ui_rect(g, 0, 0, (float)w, (float)h, ui_color(g, UI_BG, 150));
    ui_flush(g); /* the dimming is translucent: it must land before the opaque panel */
    ui_fill(g, r, UI_PANEL);
    ui_outline(g, r, S, ui_color(g, UI_TEXT, 255));
    float y = r.y + 10 * S;
    ui_text(g, UI_BIG, r.x + 14 * S, y, ui_color(g, UI_TEXT, 255), "Keys and mouse");
    y += 2 * lh;
    for (int i = 0; ui_key_row(i, &keys, &help); i++, y += lh) {
        ui_text(g, UI_SMALL, r.x + 14 * S, y, ui_color(g, UI_QUEUED, 255), keys);
        ui_text(g, UI_SMALL, r.x + 14 * S + 14 * g->font[UI_SMALL].adv, y,
                ui_color(g, UI_TEXT, 255), help);
    }
    y += lh;
    ui_text(g, UI_SMALL, r.x + 14 * S, y, ui_color(g, UI_DIM, 255),
            "mouse: hover or click a lane, dot or core to inspect it;");
    ui_text(g, UI_SMALL, r.x + 14 * S, y + lh, ui_color(g, UI_DIM, 255),
            "click or drag the timeline to re-simulate to that time");
}

/* One whole frame of the two models into g's renderer, w x h output pixels. */
static void ui_draw(struct ui_gfx *g, const struct model ms[MODEL_N], const struct ui_view *v,
                    int w, int h)
{
    struct ui_layout L;
    g->nhit = g->ntext = 0;
    for (int k = 0; k < MODEL_N; k++)
        ui_scan_model(g, &ms[k], v->travel > 0 ? v->travel : 20 * MS);
    ui_layout(g, w, h, &L);
    SDL_Color panel = ui_color(g, UI_PANEL, 255);
    SDL_SetRenderDrawColor(g->r, panel.r, panel.g, panel.b, 255);
    SDL_RenderClear(g->r);
    ui_background(g, &L, (float)w);
    ui_top_bar(g, ms, v, L.top);
    for (int k = 0; k < MODEL_N; k++)
        ui_panel(g, &ms[k], v, L.panel[k]);
    for (int i = 0; i < UI_NCHARTS; i++)
        ui_chart(g, ms, &ui_charts[i], L.chart[i], v);
    ui_slider(g, v, ms[0].s->duration, L.slider);
    ui_status(g, v, L.status);
    ui_flush(g);
    g->ntext_base = g->ntext;
    /* overlays: above everything, so a second layer */
    ui_ring(g, ms, v->ring);
    /* the card: for what is under the mouse, else for what was clicked, beside it */
    const struct ui_hit *under = v->mx >= 0 ? ui_hit_at(g, v->mx, v->my, -1, -1) : NULL;
    if (!under || under->model < 0 || under->type > UI_HIT_CORE)
        under = NULL;
    const struct ui_hit *at = under ? under
                              : v->pick.model >= 0
                                  ? ui_hit_find(g, v->pick.model, v->pick.type, v->pick.idx)
                                  : NULL;
    if (at) {
        ui_outline(g, at->r, g->scale, ui_color(g, UI_TEXT, 255));
        struct ui_pick p = {at->model, at->type, at->idx};
        ui_card(g, ms, p, under ? v->mx : at->r.x + at->r.w / 2, under ? v->my : at->r.y, w, h);
    }
    if (v->help)
        ui_help(g, w, h);
    ui_flush(g);
}

/* ---- V.6 Two models on one clock ---- */

/* Both models on one clock. `t` is the time shown; after a step the model that did not
 * step may still be before it, which is harmless: it has no event before t. */
struct ui_sim {
    struct scenario s;
    struct model m[MODEL_N];
    simtime t;
    int ready;
};

static void ui_sim_reset(struct ui_sim *x)
{
    for (int k = 0; k < MODEL_N; k++) {
        if (x->ready)
            model_free(&x->m[k]);
        model_init(&x->m[k], &x->s, k);
        x->m[k].keep_series = 1; /* the charts */
    }
    x->ready = 1;
    x->t = 0;
}

static void ui_sim_free(struct ui_sim *x)
{
    for (int k = 0; k < MODEL_N && x->ready; k++)
        model_free(&x->m[k]);
    x->ready = 0;
}

static void ui_sim_run(struct ui_sim *x, simtime to)
{
    if (to > x->s.duration)
        to = x->s.duration;
    for (int k = 0; k < MODEL_N; k++)
        model_run(&x->m[k], to);
    if (to > x->t)
        x->t = to;
}

/* Go to time t; backwards means re-simulating from zero, which gives the same state. */
static void ui_sim_seek(struct ui_sim *x, simtime t)
{
    if (t < 0)
        t = 0;
    if (t > x->s.duration)
        t = x->s.duration;
    if (t < x->t)
        ui_sim_reset(x);
    ui_sim_run(x, t);
}

static double ui_wall(void)
{
    return (double)SDL_GetPerformanceCounter() / (double)SDL_GetPerformanceFrequency();
}

/* Run forward toward `target`, but give back control after `budget` wall seconds so the
 * window stays responsive at any load. */
static void ui_sim_advance(struct ui_sim *x, simtime target, double budget)
{
    double t0 = ui_wall();
    simtime chunk = MS;
    while (x->t < target && x->t < x->s.duration && ui_wall() - t0 < budget) {
        ui_sim_run(x, x->t + chunk < target ? x->t + chunk : target);
        chunk *= 2;
    }
}

/* The model whose next event comes first (platform on ties), or -1 at the end. */
static int ui_sim_next(const struct ui_sim *x)
{
    int best = -1;
    for (int k = 0; k < MODEL_N; k++) {
        const struct model *m = &x->m[k];
        if (m->stuck || model_next_time(m) > x->s.duration)
            continue;
        if (best < 0 || model_next_time(m) < model_next_time(&x->m[best]))
            best = k;
    }
    return best;
}

/* Narrate one event of model m (already run) and say what it touched: the request, else
 * the thread. */
static void ui_narrate(const struct model *m, const struct model_subject *u, char *buf, size_t len,
                       struct ui_pick *touched)
{
    int32_t t, r;
    model_narrate(m, u, buf, len, &t, &r);
    *touched = r >= 0   ? (struct ui_pick){(int8_t)m->id, UI_PICK_REQ, r}
               : t >= 0 ? (struct ui_pick){(int8_t)m->id, UI_PICK_THREAD, t}
                        : (struct ui_pick){(int8_t)m->id, UI_PICK_NONE, -1};
}

/* Exactly one event, of whichever model is first. Returns the model stepped, or -1 when
 * both are at the end; with buf, the event is narrated there and `touched` says what to
 * ring. */
static int ui_sim_step(struct ui_sim *x, char *buf, size_t len, struct ui_pick *touched)
{
    int k = ui_sim_next(x);
    if (k < 0) {
        if (buf)
            snprintf(buf, len, "the end of the scenario");
        return -1;
    }
    struct model *m = &x->m[k];
    struct model_subject u = model_subject_of(m);
    model_step(m, model_next_time(m));
    if (m->now > x->t)
        x->t = m->now;
    if (buf)
        ui_narrate(m, &u, buf, len, touched);
    return k;
}

/* Step until a request completes in either model (bounded, so it always returns); only
 * that last event is narrated. */
static int ui_sim_next_done(struct ui_sim *x, char *buf, size_t len, struct ui_pick *touched)
{
    uint64_t done = x->m[0].stats.completed + x->m[1].stats.completed;
    for (long n = 0; n < 10000000; n++) {
        int k = ui_sim_next(x);
        if (k < 0)
            return ui_sim_step(x, buf, len, touched);
        struct model *m = &x->m[k];
        struct model_subject u = model_subject_of(m);
        model_step(m, model_next_time(m));
        if (m->now > x->t)
            x->t = m->now;
        if (x->m[0].stats.completed + x->m[1].stats.completed > done) {
            ui_narrate(m, &u, buf, len, touched);
            return k;
        }
    }
    snprintf(buf, len, "no request completed in 10,000,000 events");
    return -1;
}

/* ---- V.7 Headless frames ---- */

/* A software renderer drawing into a surface: no display and no SDL_Init needed. */
struct ui_canvas {
    SDL_Surface *surf;
    SDL_Renderer *r;
    struct ui_gfx g;
    int w, h;
};

static int ui_canvas_open_format(struct ui_canvas *c, const struct ui_options *uo, Uint32 format)
{
    memset(c, 0, sizeof *c);
    c->w = uo->width > 0 ? uo->width : 1280;
    c->h = uo->height > 0 ? uo->height : 800;
    c->surf = SDL_CreateRGBSurfaceWithFormat(0, c->w, c->h, 32, format);
    if (c->surf)
        c->r = SDL_CreateSoftwareRenderer(c->surf);
    if (!c->r) {
        fprintf(stderr, "sim: cannot create a %dx%d software canvas: %s\n", c->w, c->h,
                SDL_GetError());
        if (c->surf)
            SDL_FreeSurface(c->surf);
        return -1;
    }
    if (ui_gfx_init(&c->g, c->r, c->surf->format->format, uo, c->h) < 0) {
        ui_gfx_free(&c->g);
        SDL_DestroyRenderer(c->r);
        SDL_FreeSurface(c->surf);
        return -1;
    }
    return 0;
}

/* RGBA bytes in memory, what stbi_write_png takes. (A window's surface is usually XRGB8888,
 * which ui_canvas_open_format can imitate for timing.) */
static int ui_canvas_open(struct ui_canvas *c, const struct ui_options *uo)
{
    return ui_canvas_open_format(c, uo, SDL_PIXELFORMAT_ABGR8888);
}

static void ui_canvas_close(struct ui_canvas *c)
{
    ui_gfx_free(&c->g);
    SDL_DestroyRenderer(c->r);
    SDL_FreeSurface(c->surf);
    memset(c, 0, sizeof *c);
}

/* Draw a frame; the surface holds the pixels (RGBA bytes in memory) afterwards. */
static void ui_canvas_draw(struct ui_canvas *c, const struct model ms[MODEL_N],
                           const struct ui_view *v)
{
    ui_draw(&c->g, ms, v, c->w, c->h);
    SDL_RenderFlush(c->r);
}

/* stbi_write_png_to_func's sink: the file, and the first write's failure (errno). */
struct ui_png_sink {
    FILE *f;
    int err;
};

static void ui_png_put(void *ctx, void *data, int size)
{
    struct ui_png_sink *k = ctx;
    if (!k->err && fwrite(data, 1, (size_t)size, k->f) != (size_t)size)
        k->err = errno ? errno : EIO;
}

/* w x h RGBA pixels (rows `pitch` bytes apart) into the PNG file `path`, the write checked
 * (stbi_write_png would report a full disk as success). Returns 0, or -1 after a message. */
static int ui_png_write(const char *path, int w, int h, const void *px, int pitch)
{
    struct ui_png_sink k = {io_open_out(path), 0};
    if (!k.f)
        return -1;
    errno = 0;
    int encoded = stbi_write_png_to_func(ui_png_put, &k, w, h, 4, px, pitch);
    if (encoded && !k.err)
        return rep_close(k.f, path);
    fclose(k.f);
    fprintf(stderr, "sim: cannot write %s: %s\n", path,
            encoded ? strerror(k.err) : "the PNG encoder ran out of memory");
    return -1;
}

static int ui_canvas_png(const struct ui_canvas *c, const char *path)
{
    return ui_png_write(path, c->w, c->h, c->surf->pixels, c->surf->pitch);
}

static struct ui_view ui_view_at(simtime t)
{
    struct ui_view v = {.t = t,
                        .travel = 20 * MS,
                        .speed = 0.05,
                        .paused = 1,
                        .mx = -1,
                        .my = -1,
                        .pick = UI_NO_PICK,
                        .ring = UI_NO_PICK};
    snprintf(v.status, sizeof v.status, "t=%.3f s  (headless screenshot)", (double)t / SEC);
    return v;
}

/* A simulation of s at time 0 and a canvas to draw it on, without a display; NULL if
 * either cannot be had. ui_headless_close frees both. */
static struct ui_sim *ui_headless_open(const struct scenario *s, const struct ui_options *uo,
                                       struct ui_canvas *c)
{
    struct ui_sim *x = xcalloc(1, sizeof *x);
    x->s = *s;
    if (ui_canvas_open(c, uo) < 0) {
        free(x);
        return NULL;
    }
    ui_sim_reset(x);
    return x;
}

static void ui_headless_close(struct ui_sim *x, struct ui_canvas *c)
{
    ui_canvas_close(c);
    ui_sim_free(x);
    free(x);
}

/* One frame at simulated time `at`, without a display. */
static int ui_screenshot(const struct scenario *s, simtime at, const char *png_path,
                         const struct ui_options *uo)
{
    struct ui_canvas c;
    struct ui_sim *x = ui_headless_open(s, uo, &c);
    if (!x)
        return 1;
    ui_sim_run(x, at);
    struct ui_view v = ui_view_at(x->t);
    if ((v.live = uo->live))
        ui_live_status(&v, uo->live);
    ui_canvas_draw(&c, x->m, &v);
    int rc = ui_canvas_png(&c, png_path) < 0;
    ui_headless_close(x, &c);
    return rc;
}

/* frame_00000.png ... at `fps` frames per simulated second, for making videos. */
static int ui_frames(const struct scenario *s, const char *dir, double fps,
                     const struct ui_options *uo)
{
    enum { UI_MAX_FRAMES = 2000 };
    if (fps <= 0)
        fps = 30;
    long n = (long)((double)s->duration / SEC * fps) + 1;
    if (n > UI_MAX_FRAMES) {
        fprintf(
            stderr,
            "sim: %ld frames at %g fps; writing the first %d (lower the fps for the whole run)\n",
            n, fps, UI_MAX_FRAMES);
        n = UI_MAX_FRAMES;
    }
    if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
        fprintf(stderr, "sim: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    struct ui_canvas c;
    struct ui_sim *x = ui_headless_open(s, uo, &c);
    if (!x)
        return 1;
    int rc = 0;
    for (long i = 0; i < n && !rc; i++) {
        ui_sim_run(x, (simtime)((double)i / fps * SEC));
        struct ui_view v = ui_view_at(x->t);
        v.travel = (simtime)(SEC / fps * 3); /* a dot crosses in three frames */
        v.wall = (double)i / 30;
        ui_canvas_draw(&c, x->m, &v);
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/frame_%05ld.png", dir, i) >= (int)sizeof path) {
            fprintf(stderr, "sim: --frames %s: too long a path for its frames\n", dir);
            rc = 1; /* never a cut path: every frame would overwrite one file */
        } else
            rc = ui_canvas_png(&c, path) < 0;
    }
    if (!rc)
        fprintf(stderr, "sim: wrote %ld frames to %s/\n", n, dir);
    ui_headless_close(x, &c);
    return rc;
}

/* Pictures of figures (--plot): the conventions every one of them follows. Both axes carry
 * value ticks with labels; x is spaced by value, logarithmic when the values span more than
 * a decade and a bit (UI_LOG_SPAN); a legend names each series in the picture's header; each
 * chart's title names what it draws against what. */

#define UI_LOG_SPAN    20 /* hi / lo from which an axis is logarithmic */
#define UI_AXIS_TICKS  32 /* at most, per axis */
#define UI_AXIS_LINEAR 0
#define UI_AXIS_LOG    1

/* One axis: values lo..hi onto pixels from..to (y: from is the bottom, so from > to). */
struct ui_axis {
    double lo, hi; /* the ends; log: both > 0 */
    int log;       /* UI_AXIS_LOG: spaced by log10 of the value */
    float from, to;
};

static int ui_axis_wants_log(double lo, double hi)
{
    return lo > 0 && hi / lo >= UI_LOG_SPAN;
}

/* The step of about n ticks over a span: 1, 2 or 5 times a power of ten, the nearest. */
static double ui_tick_step(double span, int n)
{
    double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* An axis over the values lo..hi: a linear one from 0 (or lo when below 0) up to a whole
 * tick step at or above hi; a logarithmic one a twentieth of its span wider at each end,
 * so the first and last points are not on the frame. */
static struct ui_axis ui_axis_fit(double lo, double hi, int log, float from, float to)
{
    struct ui_axis a = {.log = log, .from = from, .to = to};
    if (log) {
        double pad = pow(hi / lo, 0.05);
        a.lo = lo / pad;
        a.hi = hi * pad;
        return a;
    }
    a.lo = lo < 0 ? lo : 0;
    double step = ui_tick_step(hi > a.lo ? hi - a.lo : 1, 5);
    a.hi = hi > a.lo ? ceil(hi / step) * step : a.lo + step;
    if (a.hi <= hi * 1.001) /* room above the highest point for its bar */
        a.hi += step;
    return a;
}

/* The pixel of value v (a log axis puts v <= 0 at its low end). */
static float ui_axis_at(const struct ui_axis *a, double v)
{
    double f = a->log ? (v > 0 ? log10(v / a->lo) / log10(a->hi / a->lo) : 0)
                      : (v - a->lo) / (a->hi - a->lo);
    return a->from + (float)f * (a->to - a->from);
}

/* The tick values inside the axis, ascending; returns how many (at most max). Linear: every
 * step of ui_tick_step. Log: 1, 2 and 5 times each power of ten over up to 3 decades, the
 * powers of ten alone beyond. */
static int ui_axis_ticks(const struct ui_axis *a, double *t, int max)
{
    int n = 0;
    if (!a->log) {
        double step = ui_tick_step(a->hi - a->lo, 5);
        for (double v = ceil(a->lo / step) * step; v <= a->hi * (1 + 1e-9) && n < max; v += step)
            t[n++] = fabs(v) < step * 1e-9 ? 0 : v;
        return n;
    }
    static const double mant[] = {1, 2, 5};
    int few = log10(a->hi / a->lo) <= 3;
    for (double p = pow(10, floor(log10(a->lo))); p <= a->hi && n < max; p *= 10)
        for (int k = 0; k < (few ? 3 : 1) && n < max; k++)
            if (mant[k] * p >= a->lo * (1 - 1e-9) && mant[k] * p <= a->hi * (1 + 1e-9))
                t[n++] = mant[k] * p;
    return n;
}

/* A chart: its panel, its plot area and axes. */
struct ui_chart_frame {
    SDL_FRect panel, plot;
    struct ui_axis x, y;
    const char *const *xnames; /* categories at 0, 1, ... instead of x's values, or NULL */
    int nxnames;
};

/* The plot area of a panel: room for the title above, the y labels left (as wide as the
 * widest of ylabel_w), the x labels and the axis name below. */
static SDL_FRect ui_chart_plot(const struct ui_gfx *g, SDL_FRect r, float ylabel_w)
{
    float S = g->scale, small = g->font[UI_SMALL].line;
    return (SDL_FRect){r.x + ylabel_w + 10 * S, r.y + small + 10 * S,
                       r.w - ylabel_w - 10 * S - 14 * S, r.h - 3 * small - 18 * S};
}

/* The widest label of a y axis over 0..hi, to size the plot area before the axis exists. */
static float ui_chart_ylabel_w(const struct ui_gfx *g, double lo, double hi)
{
    struct ui_axis y = ui_axis_fit(lo, hi, UI_AXIS_LINEAR, 0, 1);
    double t[UI_AXIS_TICKS];
    float w = 0;
    char buf[32];
    for (int i = 0, n = ui_axis_ticks(&y, t, UI_AXIS_TICKS); i < n; i++) {
        ui_tick_label(buf, sizeof buf, t[i]);
        w = fmaxf(w, ui_text_w(g, UI_SMALL, buf));
    }
    return w;
}

/* A chart from its data ranges: x over xlo..xhi (log when they span decades, or categories
 * when names are given), y linear over ylo..yhi. */
static struct ui_chart_frame ui_chart_make(const struct ui_gfx *g, SDL_FRect r, double xlo,
                                           double xhi, double ylo, double yhi,
                                           const char *const *xnames, int nxnames)
{
    struct ui_chart_frame f = {.panel = r, .xnames = xnames, .nxnames = nxnames};
    f.plot = ui_chart_plot(g, r, ui_chart_ylabel_w(g, ylo, yhi));
    if (xnames) { /* categories: evenly spaced, half a step in from each side */
        f.x = (struct ui_axis){-0.5, nxnames - 0.5, UI_AXIS_LINEAR, f.plot.x, f.plot.x + f.plot.w};
        if (nxnames == 1)
            f.x.lo = -1, f.x.hi = 1;
    } else if (xhi <= xlo) { /* one value: in the middle */
        double d = xlo ? fabs(xlo) / 2 : 1;
        f.x = (struct ui_axis){xlo - d, xlo + d, UI_AXIS_LINEAR, f.plot.x, f.plot.x + f.plot.w};
    } else {
        int log = ui_axis_wants_log(xlo, xhi);
        f.x = log ? ui_axis_fit(xlo, xhi, UI_AXIS_LOG, f.plot.x, f.plot.x + f.plot.w)
                  : (struct ui_axis){xlo - (xhi - xlo) / 20, xhi + (xhi - xlo) / 20, UI_AXIS_LINEAR,
                                     f.plot.x, f.plot.x + f.plot.w};
    }
    f.y =
        ui_axis_fit(ylo, yhi > ylo ? yhi : ylo + 1, UI_AXIS_LINEAR, f.plot.y + f.plot.h, f.plot.y);
    return f;
}

/* The panel, grid lines and ticks with their labels, the title above and the x axis's name
 * below. Labels that would overlap the one before are left out. */
static void ui_chart_draw_axes(struct ui_gfx *g, const struct ui_chart_frame *f, const char *title,
                               const char *xname)
{
    float S = g->scale, small = g->font[UI_SMALL].line;
    SDL_FRect p = f->plot, r = f->panel;
    SDL_Color dim = ui_color(g, UI_DIM, 255), grid = ui_color(g, UI_LINE, 255);
    double t[UI_AXIS_TICKS];
    char buf[40];
    float next = -1e9f, xrow = p.y + p.h + 5 * S; /* x's labels: left edge free, their row */
    ui_rect(g, r.x, r.y, r.w, r.h, ui_color(g, UI_PANEL, 255));
    ui_text_fit(g, UI_SMALL, r.x + 8 * S, r.y + 4 * S, ui_color(g, UI_TEXT, 255), title,
                r.w - 12 * S);
    for (int i = 0, n = ui_axis_ticks(&f->y, t, UI_AXIS_TICKS); i < n; i++) {
        float y = ui_axis_at(&f->y, t[i]);
        ui_rect(g, p.x, y, p.w, S, grid);
        ui_rect(g, p.x - 4 * S, y, 4 * S, S, dim);
        ui_tick_label(buf, sizeof buf, t[i]);
        ui_text(g, UI_SMALL, p.x - 6 * S - ui_text_w(g, UI_SMALL, buf), y - small / 2, dim, buf);
        if (y + small / 2 - 1 > xrow) /* a label at the corner, on x's row: x's start after it, */
            next = p.x - 5 * S + g->font[UI_SMALL].adv / 2; /* half a character and a pixel */
    }
    int n = f->xnames ? f->nxnames : ui_axis_ticks(&f->x, t, UI_AXIS_TICKS);
    for (int i = 0; i < n; i++) {
        double v = f->xnames ? i : t[i];
        float x = ui_axis_at(&f->x, v);
        if (f->xnames)
            snprintf(buf, sizeof buf, "%s", f->xnames[i]);
        else
            ui_tick_label(buf, sizeof buf, v);
        float w = ui_text_w(g, UI_SMALL, buf), lx = x - w / 2;
        ui_rect(g, x, p.y + p.h, S, 4 * S, dim);
        if (i == 0 && lx < next && next - lx <= w / 2) /* moved clear of y's corner label */
            lx = next;
        if (lx >= next) {
            ui_text(g, UI_SMALL, lx, xrow, dim, buf);
            next = lx + w + g->font[UI_SMALL].adv;
        }
    }
    ui_rect(g, p.x, p.y + p.h, p.w, S, ui_color(g, UI_DIM, 255)); /* the axes */
    ui_rect(g, p.x, p.y, S, p.h, ui_color(g, UI_DIM, 255));
    char name[160];
    snprintf(name, sizeof name, "%s%s", xname, f->x.log ? " (log scale)" : "");
    ui_text(g, UI_SMALL, p.x + (p.w - ui_text_w(g, UI_SMALL, name)) / 2, p.y + p.h + small + 8 * S,
            ui_color(g, UI_TEXT, 255), name);
}

/* A series' marks, named in a legend. */
enum ui_key_style { UI_KEY_LINE, UI_KEY_DASH, UI_KEY_POINT, UI_KEY_BAND, UI_KEY_BOUND };

/* A bound's line in the pictures: wide and long-dashed in its ink, under the figures' lines,
 * so that where a model runs at its bound the bound shows as dashes either side of the line,
 * and where it runs below, as a dashed line of its own. */
#define UI_BOUND_W    6
#define UI_BOUND_DASH 7 /* two dashes in the legend's swatch */
enum ui_key_mark { UI_MARK_NONE, UI_MARK_FILLED, UI_MARK_HOLLOW };
struct ui_series_key {
    const char *label;
    int ink; /* enum ui_ink */
    int style;
    int mark, mark_ink; /* a measured point's marker over the mark (enum ui_key_mark), its ink */
};

/* A measured point's marker at (X, Y): a square of the ink, filled or hollow. */
static void ui_marker(struct ui_gfx *g, float X, float Y, int ink, int hollow)
{
    float S = g->scale;
    ui_line(g, X - 4.5f * S, Y, X + 4.5f * S, Y, 9 * S, ui_color(g, ink, 255));
    if (hollow)
        ui_line(g, X - 2.5f * S, Y, X + 2.5f * S, Y, 5 * S, ui_color(g, UI_PANEL, 255));
}

/* The legend from (x, *y): each series' mark, then its name, in rows that wrap before
 * `right`. Returns the x after the last; *y is then its row's. */
static float ui_series_legend(struct ui_gfx *g, float x, float *y, const struct ui_series_key *k,
                              int n, float right)
{
    float S = g->scale, small = g->font[UI_SMALL].line, left = x;
    for (int i = 0; i < n; i++) {
        SDL_Color ink = ui_color(g, k[i].ink, 255);
        if (x > left && x + 26 * S + ui_text_w(g, UI_SMALL, k[i].label) > right) {
            x = left;
            *y += small + 4 * S;
        }
        float mid = *y + small / 2;
        if (k[i].style == UI_KEY_LINE)
            ui_line(g, x, mid, x + 22 * S, mid, 2 * S, ink);
        else if (k[i].style == UI_KEY_DASH)
            ui_dash(g, x, mid, x + 22 * S, mid, 6 * S, 0, ink);
        else if (k[i].style == UI_KEY_BOUND)
            ui_dash_w(g, x, mid, x + 22 * S, mid, UI_BOUND_DASH * S, 0, UI_BOUND_W * S, ink);
        else if (k[i].style == UI_KEY_BAND)
            ui_rect(g, x, mid - 5 * S, 22 * S, 10 * S, ui_color(g, k[i].ink, 70));
        else {
            ui_line(g, x + 11 * S, mid - 6 * S, x + 11 * S, mid + 6 * S, 1.6f * S, ink);
            ui_rect(g, x + 8 * S, mid - 3 * S, 6 * S, 6 * S, ink);
        }
        if (k[i].mark != UI_MARK_NONE)
            ui_marker(g, x + 11 * S, mid, k[i].mark_ink, k[i].mark == UI_MARK_HOLLOW);
        x = ui_text(g, UI_SMALL, x + 26 * S, *y, ui_color(g, UI_TEXT, 255), k[i].label) + 14 * S;
    }
    return x;
}

/* A polyline through (x[i], y[i]) in chart f, solid, dashed (1) or a bound's wide dash
 * (UI_KEY_BOUND); NAN values break it. */
static void ui_chart_line(struct ui_gfx *g, const struct ui_chart_frame *f, const double *x,
                          const double *y, int n, int ink, int dashed)
{
    SDL_Color c = ui_color(g, ink, 255);
    float S = g->scale, px = 0, py = 0, run = 0;
    int bound = dashed == UI_KEY_BOUND;
    int have = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(y[i])) {
            have = 0;
            continue;
        }
        float X = ui_axis_at(&f->x, x[i]), Y = ui_axis_at(&f->y, y[i]);
        if (have && bound)
            ui_dash_w(g, px, py, X, Y, UI_BOUND_DASH * S, run, UI_BOUND_W * S, c);
        else if (have && dashed)
            ui_dash(g, px, py, X, Y, 6 * S, run, c);
        else if (have)
            ui_line(g, px, py, X, Y, 2 * S, c);
        run += have ? sqrtf((X - px) * (X - px) + (Y - py) * (Y - py)) : 0;
        px = X, py = Y, have = 1;
    }
}

/* A band between lo[i] and hi[i], translucent, under what is drawn on it. */
static void ui_chart_band(struct ui_gfx *g, const struct ui_chart_frame *f, const double *x,
                          const double *lo, const double *hi, int n, int ink)
{
    SDL_Color c = ui_color(g, ink, 60);
    for (int i = 0; i + 1 < n; i++) {
        if (!isfinite(lo[i]) || !isfinite(hi[i]) || !isfinite(lo[i + 1]) || !isfinite(hi[i + 1]))
            continue;
        float x0 = ui_axis_at(&f->x, x[i]), x1 = ui_axis_at(&f->x, x[i + 1]);
        SDL_FPoint p[4] = {{x0, ui_axis_at(&f->y, hi[i])},
                           {x1, ui_axis_at(&f->y, hi[i + 1])},
                           {x1, ui_axis_at(&f->y, lo[i + 1])},
                           {x0, ui_axis_at(&f->y, lo[i])}};
        ui_batch_quad(&g->shade, p, NULL, c);
    }
}

/* A bar from pixel y0 to y1 at X, capped at each end by a line 2 half wide: a spread. */
static void ui_whisker(struct ui_gfx *g, float X, float y0, float y1, float half, SDL_Color c)
{
    float S = g->scale;
    ui_line(g, X, y0, X, y1, 1.6f * S, c);
    ui_line(g, X - half, y0, X + half, y0, 1.6f * S, c);
    ui_line(g, X - half, y1, X + half, y1, 1.6f * S, c);
}

/* A prediction's tick at (X, Y), 2 half wide in the text ink: one alone is seen too. */
static void ui_predicted_tick(struct ui_gfx *g, float X, float Y, float half)
{
    ui_line(g, X - half, Y, X + half, Y, 1.6f * g->scale, ui_color(g, UI_TEXT, 255));
}

/* A point with its bar from lo to hi (NAN: no bar). */
static void ui_chart_point(struct ui_gfx *g, const struct ui_chart_frame *f, double x, double y,
                           double lo, double hi, int ink)
{
    SDL_Color c = ui_color(g, ink, 255);
    float S = g->scale, X = ui_axis_at(&f->x, x), Y = ui_axis_at(&f->y, y);
    if (isfinite(lo) && isfinite(hi))
        ui_whisker(g, X, ui_axis_at(&f->y, lo), ui_axis_at(&f->y, hi), 3 * S, c);
    ui_line(g, X - 4.5f * S, Y, X + 4.5f * S, Y, 9 * S, ui_color(g, UI_TEXT, 255)); /* an edge */
    ui_line(g, X - 3 * S, Y, X + 3 * S, Y, 6 * S, c);
}

/* A figure's canvas with its background, title and legend drawn; returns the y below them. */
static float ui_figure_open(struct ui_canvas *c, const char *title, const struct ui_series_key *k,
                            int nk, const char *note)
{
    struct ui_gfx *g = &c->g;
    float S = g->scale, m = 12 * S, big = g->font[UI_BIG].line, small = g->font[UI_SMALL].line;
    SDL_Color bg = ui_color(g, UI_BG, 255);
    SDL_SetRenderDrawColor(c->r, bg.r, bg.g, bg.b, 255);
    SDL_RenderClear(c->r);
    ui_text_fit(g, UI_BIG, m, m, ui_color(g, UI_TEXT, 255), title, (float)c->w - 2 * m);
    float y = m + big + 4 * S, x = ui_series_legend(g, m, &y, k, nk, (float)c->w - m);
    if (note && x + ui_text_w(g, UI_SMALL, note) > (float)c->w - m) {
        x = m;
        y += small + 4 * S;
    }
    if (note)
        ui_text_fit(g, UI_SMALL, x, y, ui_color(g, UI_DIM, 255), note, (float)c->w - m - x);
    return y + small + 8 * S;
}

/* Draw what the figure's layers hold and write the PNG. 0, or -1 after a message. */
static int ui_figure_close(struct ui_canvas *c, const char *path)
{
    ui_flush(&c->g);
    SDL_RenderFlush(c->r);
    int rc = ui_canvas_png(c, path);
    ui_canvas_close(c);
    return rc;
}

/* --plot of a sweep: its figures against its key, three charts side by side: throughput
 * (each model's binding bound, wide dashes in dim grey under the lines), p99, OS threads. The
 * simulator's figures in the text ink, platform solid and virtual dashed; a 95% interval is
 * a bar through its point. The key's values are x's values when they are numbers (a unit
 * after them, as in 50ms, is the axis's), else evenly spaced names. */
static const struct ui_sweep_chart {
    const char *title;
    size_t off; /* the figure in struct result */
    int bound;  /* 1: each model's binding bound, a bound's wide dash (UI_KEY_BOUND) */
} ui_sweep_charts[] = {
    {"throughput (req/s)", RR(throughput_rps), 1},
    {"latency p99 (ms)", RR(p99), 0},
    {"peak OS threads", RR(peak_os_threads), 0},
};

static double ui_sweep_get(const struct sweep *sw, int i, int mk, size_t off, int ci)
{
    const struct result *r = ci ? &sw->rp[i].ci[mk] : &sw->rp[i].r[mk];
    double v = *(const double *)((const char *)r + off);
    return isfinite(v) ? v : 0;
}

/* The sweep's values as numbers with one unit (x[i], unit), or -1 when they are not. */
static int ui_sweep_x(const struct sweep *sw, double *x, char *unit, size_t len)
{
    for (int i = 0; i < sw->n; i++) {
        char *end;
        errno = 0;
        x[i] = strtod(sw->val[i][0], &end);
        if (end == sw->val[i][0] || errno || !isfinite(x[i]) || (i && strcmp(end, unit)))
            return -1;
        if (!i)
            snprintf(unit, len, "%s", end);
    }
    return 0;
}

static void ui_sweep_chart(struct ui_gfx *g, const struct sweep *sw, const struct ui_sweep_chart *c,
                           SDL_FRect r, const double *xv, const char *xname)
{
    double ymax = 0, y[SWEEP_MAX], lo[SWEEP_MAX], hi[SWEEP_MAX], xi[SWEEP_MAX] = {0};
    const char *names[SWEEP_MAX];
    char title[128];
    for (int i = 0; i < sw->n; i++) {
        names[i] = sw->val[i][0];
        xi[i] = xv ? xv[i] : i;
        for (int mk = 0; mk < MODEL_N; mk++)
            ymax =
                fmax(ymax, ui_sweep_get(sw, i, mk, c->off, 0) + ui_sweep_get(sw, i, mk, c->off, 1));
    }
    struct ui_chart_frame f =
        ui_chart_make(g, r, xi[0], xi[sw->n - 1], 0, ymax, xv ? NULL : names, sw->n);
    snprintf(title, sizeof title, "%s against %s", c->title, sw->key[0]);
    ui_chart_draw_axes(g, &f, title, xname);
    for (int mk = 0; mk < MODEL_N; mk++) {
        for (int i = 0; i < sw->n; i++) {
            const struct bounds *b = &sw->rp[i].r[mk].bounds;
            y[i] = b->binding >= 0 ? fmin(b->rps[b->binding], f.y.hi) : NAN;
        }
        if (c->bound) /* under the lines: seen either side of them, and where above */
            ui_chart_line(g, &f, xi, y, sw->n, UI_DIM, UI_KEY_BOUND);
    }
    for (int mk = 0; mk < MODEL_N; mk++) {
        for (int i = 0; i < sw->n; i++) {
            double h = ui_sweep_get(sw, i, mk, c->off, 1);
            y[i] = ui_sweep_get(sw, i, mk, c->off, 0);
            lo[i] = h > 0 ? y[i] - h : NAN;
            hi[i] = h > 0 ? y[i] + h : NAN;
            ui_chart_point(g, &f, xi[i], y[i], lo[i], hi[i], UI_TEXT);
        }
        ui_chart_line(g, &f, xi, y, sw->n, UI_TEXT, model_words_of(mk)->dashed);
    }
}

/* The picture of a one-key sweep, written to path. 0, or -1 after a message. */
static int ui_sweep_png(const struct sweep *sw, const char *path, const struct ui_options *uo)
{
    struct ui_canvas c;
    if (ui_canvas_open(&c, uo) < 0)
        return -1;
    struct ui_gfx *g = &c.g;
    static const struct ui_series_key keys[] = {
        {"platform", UI_TEXT, UI_KEY_LINE, 0, 0},
        {"virtual", UI_TEXT, UI_KEY_DASH, 0, 0},
        {"each model's binding bound", UI_DIM, UI_KEY_BOUND, 0, 0},
        {"95% interval", UI_TEXT, UI_KEY_POINT, 0, 0}};
    char title[256], note[96], unit[16] = "", xname[96];
    double x[SWEEP_MAX];
    int numeric = ui_sweep_x(sw, x, unit, sizeof unit) == 0;
    snprintf(title, sizeof title, "%s: %s swept from %s to %s", sw->s[0].name, sw->key[0],
             sw->val[0][0], sw->val[sw->n - 1][0]);
    snprintf(note, sizeof note, "(%s of %d)", sw->rp[0].batches ? "batch means" : "replications",
             sw->rp[0].n);
    snprintf(xname, sizeof xname, "%s%s%s%s", sw->key[0], numeric && *unit ? " (" : "",
             numeric ? unit : "", numeric && *unit ? ")" : "");
    float S = g->scale, m = 12 * S, top = ui_figure_open(&c, title, keys, 4, note);
    int nc = (int)(sizeof ui_sweep_charts / sizeof ui_sweep_charts[0]);
    float w = ((float)c.w - (nc + 1) * m) / nc;
    for (int i = 0; i < nc; i++)
        ui_sweep_chart(g, sw, &ui_sweep_charts[i],
                       (SDL_FRect){m + i * (w + m), top, w, (float)c.h - top - m},
                       numeric ? x : NULL, xname);
    return ui_figure_close(&c, path);
}

/* --validate --plot: prediction against measurement over users, two charts (throughput, peak
 * OS threads). The prediction (the mean of replications) is the simulator's: a line in the
 * text ink, platform solid and virtual dashed, in a translucent band of its 95% interval;
 * each measured point is a marker in the measured blue (a second configuration in
 * vermillion), filled for platform and hollow for virtual, with its spread over runs as a
 * bar. More configurations than two repeat the two inks; the legend names each series. */

/* Series k's configuration (pool, closer, K, D: what is not its mode), numbered in order of
 * first appearance; its measured points' ink follows it. */
static int ui_validate_config(const struct val_point *p, const struct val_series *sr, int k)
{
    int c = 0;
    for (int j = 0; j <= k; j++) {
        int i = 0; /* does series j open a configuration? */
        while (i < j && !val_same_config(&p[sr[i].first], &p[sr[j].first]))
            i++;
        if (i < j)
            continue;
        if (val_same_config(&p[sr[j].first], &p[sr[k].first]))
            return c;
        c++;
    }
    return c;
}

static int ui_validate_ink(const struct val_point *p, const struct val_series *sr, int k)
{
    return ui_validate_config(p, sr, k) % 2 ? UI_MEASURED2 : UI_MEASURED;
}

static void ui_validate_chart(struct ui_gfx *g, SDL_FRect r, int metric, const char *title,
                              const struct val_point *p, int n, const struct val_series *sr, int ns)
{
    double xlo = INFINITY, xhi = 0, yhi = 0, lo, hi;
    double scale = metric == VM_RSS ? 1.0 / 1048576 : 1;
    for (int i = 0; i < n; i++) {
        xlo = fmin(xlo, (double)p[i].users), xhi = fmax(xhi, (double)p[i].users);
        val_spread(&p[i], &lo, &hi);
        yhi = fmax(yhi, fmax(p[i].measured[metric], metric == VM_RPS && isfinite(hi) ? hi : 0));
    }
    for (int k = 0; k < ns; k++)
        for (int j = 0; j < sr[k].n; j++)
            yhi = fmax(yhi, sr[k].mean[metric][j] + sr[k].half[metric][j]);
    struct ui_chart_frame f = ui_chart_make(g, r, xlo, xhi, 0, yhi * scale, NULL, 0);
    ui_chart_draw_axes(g, &f, title, "users");
    for (int k = 0; k < ns; k++) { /* the predictions first, under every measured point */
        double y[VAL_CURVE_MAX], l[VAL_CURVE_MAX], h[VAL_CURVE_MAX];
        for (int j = 0; j < sr[k].n; j++) {
            y[j] = sr[k].mean[metric][j] * scale;
            l[j] = (sr[k].mean[metric][j] - sr[k].half[metric][j]) * scale;
            h[j] = (sr[k].mean[metric][j] + sr[k].half[metric][j]) * scale;
        }
        ui_chart_band(g, &f, sr[k].users, l, h, sr[k].n, UI_TEXT);
        ui_chart_line(g, &f, sr[k].users, y, sr[k].n, UI_TEXT,
                      model_words_of(p[sr[k].first].mode)->dashed);
        for (int j = 0; j < sr[k].n; j++)
            ui_predicted_tick(g, ui_axis_at(&f.x, sr[k].users[j]), ui_axis_at(&f.y, y[j]),
                              5 * g->scale);
    }
    for (int k = 0; k < ns; k++) {
        int ink = ui_validate_ink(p, sr, k), hollow = model_words_of(p[sr[k].first].mode)->dashed;
        SDL_Color c = ui_color(g, ink, 255);
        for (int i = 0; i < n; i++) {
            if (!val_same_series(&p[sr[k].first], &p[i]))
                continue;
            if (metric != VM_RPS || !val_spread(&p[i], &lo, &hi))
                lo = hi = NAN;
            float X = ui_axis_at(&f.x, (double)p[i].users);
            if (isfinite(lo) && isfinite(hi))
                ui_whisker(g, X, ui_axis_at(&f.y, lo * scale), ui_axis_at(&f.y, hi * scale),
                           4 * g->scale, c);
            ui_marker(g, X, ui_axis_at(&f.y, p[i].measured[metric] * scale), ink, hollow);
        }
    }
}

/* --validate --plot of a parallel fan-out under failures (rows with a fail_share): what the
 * policy changes, a category per row on x (its policy: cancel ends the scope at the first
 * failure, wait joins the slowest sibling). Two charts: the failed requests' latency and the
 * time the calls held a connection per request. The prediction is a tick in the text ink;
 * each measured figure a marker in its series' measured ink (hollow: virtual), the failed
 * requests' p50 with a bar up to their p99. */
struct ui_fan_chart {
    const char *title;
    int fig, whisker; /* the row's fan[] figure, and the one its bar reaches (-1: none) */
};
static const struct ui_fan_chart ui_fan_charts[] = {
    {"failed requests' latency (ms): p50, bar to p99", VF_FAILED_P50, VF_FAILED_P99},
    {"time a connection was held per request (ms)", VF_CALL_MS, -1},
};

/* Does a row fail a share of its calls (its figure is then ui_fan_draw's)? */
static int ui_fan_wanted(const struct val_point *p, int n)
{
    for (int i = 0; i < n; i++)
        if (val_failing(&p[i]))
            return 1;
    return 0;
}

/* The series of row i (its measured ink and marker follow it). */
static int ui_fan_series(const struct val_point *p, int i, const struct val_series *sr, int ns)
{
    int k = 0;
    while (k + 1 < ns && !val_same_series(&p[sr[k].first], &p[i]))
        k++;
    return k;
}

static void ui_fan_chart(struct ui_gfx *g, SDL_FRect r, const struct ui_fan_chart *ch,
                         const struct val_point *p, int n, const struct val_series *sr, int ns,
                         const char *const *xnames)
{
    double yhi = 0;
    for (int i = 0; i < n; i++) {
        const double v[] = {p[i].fan[ch->fig], p[i].fan_pred[ch->fig],
                            ch->whisker >= 0 ? p[i].fan[ch->whisker] : NAN};
        for (int j = 0; j < 3; j++)
            yhi = isfinite(v[j]) ? fmax(yhi, v[j]) : yhi;
    }
    struct ui_chart_frame f = ui_chart_make(g, r, 0, 0, 0, yhi, xnames, n);
    float S = g->scale;
    ui_chart_draw_axes(g, &f, ch->title, "on_failure: the fan-out's policy");
    for (int i = 0; i < n; i++) /* the predictions first, under every measured point */
        if (isfinite(p[i].fan_pred[ch->fig]))
            ui_predicted_tick(g, ui_axis_at(&f.x, i), ui_axis_at(&f.y, p[i].fan_pred[ch->fig]),
                              10 * S);
    for (int i = 0; i < n; i++) {
        int k = ui_fan_series(p, i, sr, ns), ink = ui_validate_ink(p, sr, k);
        double y = p[i].fan[ch->fig], top = ch->whisker >= 0 ? p[i].fan[ch->whisker] : NAN;
        float X = ui_axis_at(&f.x, i);
        if (!isfinite(y))
            continue;
        if (isfinite(top))
            ui_whisker(g, X, ui_axis_at(&f.y, y), ui_axis_at(&f.y, top), 4 * S,
                       ui_color(g, ink, 255));
        ui_marker(g, X, ui_axis_at(&f.y, y), ink, model_words_of(p[i].mode)->dashed);
    }
}

/* The fan-out's figure: its legend (a series per policy, then what the marks mean), title and
 * the two charts side by side. */
static void ui_fan_draw(struct ui_canvas *c, const struct val_point *p, int n,
                        const struct val_series *sr, int ns, const char *csv)
{
    struct ui_gfx *g = &c->g;
    struct ui_series_key keys[VAL_SERIES_MAX + 2];
    char names[VAL_SERIES_MAX][64], title[320], (*cat)[64] = xcalloc((size_t)n, sizeof *cat);
    const char **xn = xcalloc((size_t)n, sizeof *xn);
    int nk = 0;
    for (int k = 0; k < ns; k++) {
        const struct val_point *q = &p[sr[k].first];
        int hollow = model_words_of(q->mode)->dashed;
        snprintf(names[k], sizeof names[k], "%s, %s", val_fan_policy(q), model_names[q->mode]);
        keys[nk++] = (struct ui_series_key){names[k], ui_validate_ink(p, sr, k), UI_KEY_POINT,
                                            hollow ? UI_MARK_HOLLOW : UI_MARK_FILLED,
                                            ui_validate_ink(p, sr, k)};
    }
    keys[nk++] = (struct ui_series_key){"line: predicted", UI_TEXT, UI_KEY_LINE, 0, 0};
    keys[nk++] = (struct ui_series_key){"square: measured, bar: p50 to p99", UI_MEASURED,
                                        UI_KEY_POINT, 0, 0};
    for (int i = 0; i < n; i++) {
        snprintf(cat[i], sizeof cat[i], "%s, %s, %ld users", val_fan_policy(&p[i]),
                 model_names[p[i].mode], p[i].users);
        xn[i] = cat[i];
    }
    const struct val_point *q = &p[sr[0].first];
    snprintf(title, sizeof title,
             "Predicted against measured: the %s aggregator's fan-out of %d calls of %g ms, "
             "a share %g of the first failing after %g ms (%s)",
             q->server == VS_JAVA ? "JVM (Tomcat)" : "C", q->fanout, q->delay_ms, q->fan[VF_SHARE],
             q->fan[VF_AFTER_MS], csv);
    float S = g->scale, m = 12 * S, top = ui_figure_open(c, title, keys, nk, NULL);
    float w = ((float)c->w - 3 * m) / 2;
    for (int i = 0; i < 2; i++)
        ui_fan_chart(g, (SDL_FRect){m + i * (w + m), top, w, (float)c->h - top - m},
                     &ui_fan_charts[i], p, n, sr, ns, xn);
    free(xn);
    free(cat);
}

/* The validation's figure on an open canvas (its texts are then the canvas's). */
static void ui_validate_draw(struct ui_canvas *c, const struct val_point *p, int n,
                             const struct val_series *sr, int ns, const char *csv)
{
    struct ui_gfx *g = &c->g;
    struct ui_series_key keys[VAL_SERIES_MAX + 3];
    char names[VAL_SERIES_MAX][96], title[256], note[160];
    int detail = 0, nk = 0;
    if (ui_fan_wanted(p, n)) {
        ui_fan_draw(c, p, n, sr, ns, csv);
        return;
    }
    for (int k = 1; k < ns; k++)
        detail |= !val_same_series(&p[sr[k].first], &p[sr[0].first]) &&
                  p[sr[k].first].mode == p[sr[0].first].mode;
    for (int k = 1; k < ns && !detail; k++) /* two modes of one configuration: name the modes */
        detail |= p[sr[k].first].pooled != p[sr[0].first].pooled ||
                  p[sr[k].first].fanout != p[sr[0].first].fanout ||
                  p[sr[k].first].delay_ms != p[sr[0].first].delay_ms;
    for (int k = 0; k < ns; k++) { /* its predicted line, and its measured points' marker */
        int dashed = model_words_of(p[sr[k].first].mode)->dashed;
        val_series_name(names[k], sizeof names[k], &p[sr[k].first], detail);
        keys[nk++] = (struct ui_series_key){names[k], UI_TEXT, dashed ? UI_KEY_DASH : UI_KEY_LINE,
                                            dashed ? UI_MARK_HOLLOW : UI_MARK_FILLED,
                                            ui_validate_ink(p, sr, k)};
    }
    char band[64];
    snprintf(band, sizeof band, "line: predicted, in its 95%% band of %d replications",
             VAL_BAND_REPS);
    keys[nk++] = (struct ui_series_key){band, UI_TEXT, UI_KEY_BAND, 0, 0};
    double lo, hi;
    const char *spread = NULL;
    for (int i = 0; i < n && !spread; i++)
        spread = val_spread(&p[i], &lo, &hi);
    snprintf(note, sizeof note, "square: measured%s%s", spread ? ", bar: " : "",
             spread ? spread : "");
    keys[nk++] = (struct ui_series_key){note, UI_MEASURED, UI_KEY_POINT, 0, 0};
    const struct val_point *q = &p[sr[0].first];
    snprintf(title, sizeof title, "Predicted against measured: the %s aggregator over users (%s)",
             q->server == VS_JAVA ? "JVM (Tomcat)" : "C", csv);
    if (!detail)
        snprintf(title, sizeof title,
                 "Predicted against measured: the %s aggregator over users, %d calls of %g ms, "
                 "pool %s (%s)",
                 q->server == VS_JAVA ? "JVM (Tomcat)" : "C", q->fanout, q->delay_ms,
                 q->pooled ? "on" : "off", csv);
    float S = g->scale, m = 12 * S, top = ui_figure_open(c, title, keys, nk, NULL);
    float w = ((float)c->w - 3 * m) / 2;
    ui_validate_chart(g, (SDL_FRect){m, top, w, (float)c->h - top - m}, VM_RPS,
                      "throughput (req/s) against users", p, n, sr, ns);
    ui_validate_chart(g, (SDL_FRect){2 * m + w, top, w, (float)c->h - top - m}, VM_THREADS,
                      "peak OS threads against users", p, n, sr, ns);
}

/* The picture of a validation, written to path. 0, or -1 after a message. */
static int ui_validate_png(const struct val_point *p, int n, const struct val_series *sr, int ns,
                           const char *csv, const char *path, const struct ui_options *uo)
{
    struct ui_canvas c;
    if (ui_canvas_open(&c, uo) < 0)
        return -1;
    ui_validate_draw(&c, p, n, sr, ns, csv);
    return ui_figure_close(&c, path);
}

/* --validate timeline.csv --plot: the port wall over time. A column per cell (at most 4
 * drawn), a row per series on one clock (served a second, failed a second, sockets in
 * TIME_WAIT): measured solid, predicted dashed, the first no_port of each marked. */
static void ui_timeline_chart(struct ui_gfx *g, SDL_FRect r, const struct tl_cell *c, int k,
                              const char *title)
{
    double x[TL_MAX_S], ymax = 1;
    for (int t = 0; t < c->n; t++) {
        x[t] = t + 1;
        ymax = fmax(ymax, fmax(c->meas[k][t], c->pred[k][t]));
    }
    struct ui_chart_frame f = ui_chart_make(g, r, 0, c->n, 0, ymax, NULL, 0);
    f.x = (struct ui_axis){0, c->n, UI_AXIS_LINEAR, f.plot.x, f.plot.x + f.plot.w};
    ui_chart_draw_axes(g, &f, title, "seconds since the load started");
    const double wall[2] = {c->wall_meas, c->wall_pred};
    for (int w = 0; w < 2; w++) /* where the first no_port came: a thin red line */
        if (!isnan(wall[w])) {
            float X = ui_axis_at(&f.x, wall[w]);
            if (w)
                ui_dash(g, X, f.plot.y, X, f.plot.y + f.plot.h, 6 * g->scale, 0,
                        ui_color(g, UI_ALERT, 200));
            else
                ui_line(g, X, f.plot.y, X, f.plot.y + f.plot.h, g->scale,
                        ui_color(g, UI_ALERT, 200));
        }
    ui_chart_line(g, &f, x, c->pred[k], c->n, UI_TEXT, 1);
    ui_chart_line(g, &f, x, c->meas[k], c->n, UI_MEASURED, 0);
}

/* The timeline's figure on an open canvas (its texts are then the canvas's). */
static void ui_timeline_draw(struct ui_canvas *cv, const struct tl_cell *c, int n, const char *csv)
{
    struct ui_gfx *g = &cv->g;
    static const struct ui_series_key keys[] = {
        {"measured", UI_MEASURED, UI_KEY_LINE, 0, 0},
        {"predicted", UI_TEXT, UI_KEY_DASH, 0, 0},
        {"first no_port: measured", UI_ALERT, UI_KEY_LINE, 0, 0},
        {"predicted", UI_ALERT, UI_KEY_DASH, 0, 0}};
    char title[256];
    snprintf(title, sizeof title,
             "The port wall over time, %ld users: served, failed and TIME_WAIT, measured "
             "against predicted (%s)",
             n > 0 ? c[0].pt.users : 0L, csv);
    float S = g->scale, m = 12 * S, top = ui_figure_open(cv, title, keys, 4, NULL);
    int cols = n < 4 ? n : 4;
    float w = ((float)cv->w - (cols + 1) * m) / cols, h = ((float)cv->h - top - 3 * m) / 3;
    /* a panel's title fits a quarter of the figure: what, whose, and the one condition that
     * differs between the cells (pooled, or which side closes first) */
    static const char *const what[TL_N] = {"served/s", "failed/s", NULL, "TIME_WAIT"};
    static const int rows[3] = {TL_SERVED, TL_FAILED, TL_TIME_WAIT};
    for (int i = 0; i < cols; i++) {
        const struct val_point *p = &c[i].pt;
        for (int j = 0; j < 3; j++) {
            char t[160];
            snprintf(t, sizeof t, "%s: %s %s, %s%s", what[rows[j]], val_server_names[p->server],
                     model_names[p->mode], p->pooled ? "pooled" : val_closer_name(p),
                     p->pooled ? "" : " closes");
            ui_timeline_chart(g, (SDL_FRect){m + i * (w + m), top + j * (h + m), w, h}, &c[i],
                              rows[j], t);
        }
    }
}

static int ui_timeline_png(const struct tl_cell *c, int n, const char *csv, const char *path,
                           const struct ui_options *uo)
{
    struct ui_canvas cv;
    if (ui_canvas_open(&cv, uo) < 0)
        return -1;
    ui_timeline_draw(&cv, c, n, csv);
    if (n > 4)
        fprintf(stderr, "sim: %s draws the first %d of %d cells\n", path, 4, n);
    return ui_figure_close(&cv, path);
}

/* ---- V.8 Interactive window ---- */

typedef int (*ui_load_fn)(struct scenario *, const char *path, void *ctx, char *err, size_t errlen);

struct ui_app {
    struct ui_sim sim;
    struct ui_view view;
    struct ui_gfx g;
    SDL_Window *win;
    const char *const *paths;
    int npaths, cur;
    ui_load_fn load;
    void *ctx;
    const struct ui_options *uo;
    int speed_i, quit, dragging, w, h, shots;
    double last;     /* wall time of the previous frame */
    double since_ev; /* simulated time owed from fractional frames */
};

/* Simulation speed on a log scale; the last entry, 0, is as fast as possible. */
static const double ui_speeds[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                                   0.2,   0.5,   1,     2,    5,    10,   0};
#define UI_NSPEEDS (int)(sizeof ui_speeds / sizeof ui_speeds[0])

/* The clock in the status line, and whether it runs: a paused window never says running. */
static void ui_status_clock(struct ui_app *a)
{
    snprintf(a->view.status, sizeof a->view.status, "t=%.3f s  %s", (double)a->sim.t / SEC,
             a->view.paused ? "paused" : "running");
}

static void ui_key_pause(struct ui_app *a, int arg)
{
    (void)arg;
    a->view.paused = !a->view.paused;
    ui_status_clock(a);
}
static void ui_key_help(struct ui_app *a, int arg)
{
    (void)arg;
    a->view.help = !a->view.help;
}
static void ui_key_quit(struct ui_app *a, int arg)
{
    (void)arg;
    a->quit = 1;
}
static void ui_key_theme(struct ui_app *a, int arg)
{
    (void)arg;
    a->g.light = !a->g.light;
}

static void ui_key_speed(struct ui_app *a, int arg)
{
    a->speed_i += arg;
    if (a->speed_i < 0)
        a->speed_i = 0;
    if (a->speed_i >= UI_NSPEEDS)
        a->speed_i = UI_NSPEEDS - 1;
    a->view.speed = ui_speeds[a->speed_i];
}

static void ui_key_step(struct ui_app *a, int until_done)
{
    a->view.paused = 1;
    if (until_done)
        ui_sim_next_done(&a->sim, a->view.status, sizeof a->view.status, &a->view.ring);
    else
        ui_sim_step(&a->sim, a->view.status, sizeof a->view.status, &a->view.ring);
    a->view.t = a->sim.t;
}

static void ui_seek(struct ui_app *a, simtime t)
{
    ui_sim_seek(&a->sim, t);
    a->view.t = a->sim.t;
    a->view.ring = UI_NO_PICK;
    snprintf(a->view.status, sizeof a->view.status,
             "t=%.6f s  re-simulated from 0 to here (the same seed gives the same run)",
             (double)a->sim.t / SEC);
}

/* Back by arg milliseconds of simulated time. */
static void ui_key_back(struct ui_app *a, int arg)
{
    ui_seek(a, a->sim.t - (simtime)arg * MS);
}

static int ui_load(struct ui_app *a, int i)
{
    char err[512];
    struct scenario s;
    if (a->load(&s, a->paths[i], a->ctx, err, sizeof err) < 0) {
        snprintf(a->view.status, sizeof a->view.status, "%.199s", err);
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    ui_sim_free(&a->sim);
    a->sim.s = s;
    a->cur = i;
    ui_sim_reset(&a->sim);
    a->view.t = 0;
    a->view.ring = a->view.pick = UI_NO_PICK;
    snprintf(a->view.status, sizeof a->view.status, "loaded %s (%d of %d)", a->paths[i], i + 1,
             a->npaths);
    return 0;
}

static void ui_key_restart(struct ui_app *a, int arg)
{
    (void)arg;
    ui_load(a, a->cur);
}

static void ui_key_scenario(struct ui_app *a, int arg)
{
    if (arg < a->npaths)
        ui_load(a, arg);
    else
        snprintf(a->view.status, sizeof a->view.status,
                 "no scenario %d: %d given on the command line", arg + 1, a->npaths);
}

/* 's': the window as it is, into loomlab-NAME-T.png in the current directory. */
static void ui_key_shot(struct ui_app *a, int arg)
{
    (void)arg;
    char path[128];
    snprintf(path, sizeof path, "loomlab-%d-%.3fs-%d.png", a->cur + 1, (double)a->sim.t / SEC,
             ++a->shots);
    uint8_t *px = malloc((size_t)a->w * (size_t)a->h * 4);
    if (!px || SDL_RenderReadPixels(a->g.r, NULL, SDL_PIXELFORMAT_ABGR8888, px, a->w * 4) < 0)
        snprintf(a->view.status, sizeof a->view.status, "screenshot failed: %s", SDL_GetError());
    else if (ui_png_write(path, a->w, a->h, px, a->w * 4) < 0)
        snprintf(a->view.status, sizeof a->view.status, "cannot write %s (stderr says why)", path);
    else
        snprintf(a->view.status, sizeof a->view.status, "wrote %s", path);
    free(px);
}

/* The key bindings: one row each; the help overlay is generated from this table. */
static const struct ui_key {
    SDL_Keycode key;
    int shift; /* 1: only with shift, 0: only without, -1: either */
    void (*fn)(struct ui_app *, int);
    int arg;
    const char *keys, *help; /* NULL for rows that repeat one already shown */
} ui_keys[] = {
    {SDLK_SPACE, -1, ui_key_pause, 0, "space", "pause / resume"},
    {SDLK_RIGHT, 0, ui_key_step, 0, "-> or n", "advance one event (narrated in the status line)"},
    {SDLK_n, -1, ui_key_step, 0, NULL, NULL},
    {SDLK_RIGHT, 1, ui_key_step, 1, "shift ->", "advance to the next request completion"},
    {SDLK_LEFT, 0, ui_key_back, 100, "<-", "back 100 ms (re-simulates from zero)"},
    {SDLK_LEFT, 1, ui_key_back, 1000, "shift <-", "back 1 s"},
    {SDLK_PLUS, -1, ui_key_speed, 1, "+ / -", "faster / slower (x0.001 ... as fast as possible)"},
    {SDLK_EQUALS, -1, ui_key_speed, 1, NULL, NULL},
    {SDLK_KP_PLUS, -1, ui_key_speed, 1, NULL, NULL},
    {SDLK_MINUS, -1, ui_key_speed, -1, NULL, NULL},
    {SDLK_KP_MINUS, -1, ui_key_speed, -1, NULL, NULL},
    {SDLK_r, -1, ui_key_restart, 0, "r", "restart the scenario"},
    {SDLK_1, -1, ui_key_scenario, 0, "1 ... 9", "switch to scenario N of the command line"},
    {SDLK_2, -1, ui_key_scenario, 1, NULL, NULL},
    {SDLK_3, -1, ui_key_scenario, 2, NULL, NULL},
    {SDLK_4, -1, ui_key_scenario, 3, NULL, NULL},
    {SDLK_5, -1, ui_key_scenario, 4, NULL, NULL},
    {SDLK_6, -1, ui_key_scenario, 5, NULL, NULL},
    {SDLK_7, -1, ui_key_scenario, 6, NULL, NULL},
    {SDLK_8, -1, ui_key_scenario, 7, NULL, NULL},
    {SDLK_9, -1, ui_key_scenario, 8, NULL, NULL},
    {SDLK_s, -1, ui_key_shot, 0, "s", "screenshot to loomlab-SCENARIO-TIME-K.png"},
    {SDLK_t, -1, ui_key_theme, 0, "t", "light / dark theme"},
    {SDLK_h, -1, ui_key_help, 0, "h or ?", "this help"},
    {SDLK_SLASH, -1, ui_key_help, 0, NULL, NULL},
    {SDLK_ESCAPE, -1, ui_key_quit, 0, "q or esc", "quit"},
    {SDLK_q, -1, ui_key_quit, 0, NULL, NULL},
};
#define UI_NKEYS (int)(sizeof ui_keys / sizeof ui_keys[0])

/* The i-th documented row, for the help overlay; NULL past the end. */
static const struct ui_key *ui_key_row(int i, const char **keys, const char **help)
{
    for (int k = 0; k < UI_NKEYS; k++)
        if (ui_keys[k].keys && i-- == 0) {
            *keys = ui_keys[k].keys;
            *help = ui_keys[k].help;
            return &ui_keys[k];
        }
    return NULL;
}

static void ui_on_key(struct ui_app *a, const SDL_KeyboardEvent *e)
{
    int shift = (e->keysym.mod & KMOD_SHIFT) != 0;
    for (int k = 0; k < UI_NKEYS; k++) {
        const struct ui_key *b = &ui_keys[k];
        if (b->key == e->keysym.sym && (b->shift < 0 || b->shift == shift)) {
            b->fn(a, b->arg);
            return;
        }
    }
}

/* Window coordinates to output pixels (they differ on high-DPI screens). */
static void ui_mouse(struct ui_app *a, int x, int y)
{
    int ww, wh;
    SDL_GetWindowSize(a->win, &ww, &wh);
    a->view.mx = (float)x * (float)a->w / (float)(ww ? ww : 1);
    a->view.my = (float)y * (float)a->h / (float)(wh ? wh : 1);
}

static void ui_slider_seek(struct ui_app *a)
{
    const struct ui_hit *h = ui_hit_find(&a->g, -1, UI_HIT_SLIDER, -1);
    if (!h)
        return;
    double f = (a->view.mx - h->r.x) / h->r.w;
    ui_seek(a, (simtime)(fmin(fmax(f, 0), 1) * (double)a->sim.s.duration));
}

static void ui_on_click(struct ui_app *a)
{
    const struct ui_hit *h = ui_hit_at(&a->g, a->view.mx, a->view.my, -1, -1);
    if (h && h->type == UI_HIT_SLIDER) {
        a->dragging = 1;
        ui_slider_seek(a);
        return;
    }
    a->view.pick = h && h->model >= 0 && h->type <= UI_HIT_CORE
                       ? (struct ui_pick){h->model, h->type, h->idx}
                       : UI_NO_PICK;
}

static void ui_on_event(struct ui_app *a, const SDL_Event *e)
{
    if (e->type == SDL_QUIT)
        a->quit = 1;
    else if (e->type == SDL_KEYDOWN)
        ui_on_key(a, &e->key);
    else if (e->type == SDL_MOUSEMOTION) {
        ui_mouse(a, e->motion.x, e->motion.y);
        if (a->dragging)
            ui_slider_seek(a);
    } else if (e->type == SDL_MOUSEBUTTONDOWN && e->button.button == SDL_BUTTON_LEFT) {
        ui_mouse(a, e->button.x, e->button.y);
        ui_on_click(a);
    } else if (e->type == SDL_MOUSEBUTTONUP)
        a->dragging = 0;
    else if (e->type == SDL_WINDOWEVENT && e->window.event == SDL_WINDOWEVENT_LEAVE)
        a->view.mx = a->view.my = -1;
}

/* Advance the clock by the wall time since the last frame times the speed. */
static void ui_tick(struct ui_app *a)
{
    double now = ui_wall(), dt = now - a->last;
    a->last = now;
    a->view.wall = now;
    if (dt > 0.25)
        dt = 0.25; /* after a stall (a drag, a minimised window) do not jump */
    struct live *lv = a->uo->live;
    if (lv) { /* the clock follows the real aggregator: real time, polled once a second */
        char err[256];
        a->view.live = lv;
        if (now - lv->last_t >= 1.0 && live_poll(lv, now, err, sizeof err) < 0) {
            snprintf(a->view.status, sizeof a->view.status, "LIVE: %.180s", err);
            return;
        }
        if (lv->n)
            ui_sim_advance(&a->sim, (simtime)(lv->v[lv->n - 1].t * SEC), 0.012);
        a->view.t = a->sim.t;
        ui_live_status(&a->view, lv);
        return;
    }
    if (a->view.paused || a->sim.t >= a->sim.s.duration)
        return;
    double speed = a->view.speed;
    simtime target = speed > 0 ? a->sim.t + (simtime)(dt * speed * SEC) : a->sim.s.duration;
    ui_sim_advance(&a->sim, target, 0.012);
    a->view.t = a->sim.t;
    /* a dot crosses in 150 ms of screen time, whatever the speed */
    a->view.travel = speed > 0 ? (simtime)(0.15 * speed * SEC) : (simtime)(dt * 10 * MS * 1000);
    if (a->view.travel < US)
        a->view.travel = US;
    if (a->sim.t >= a->sim.s.duration)
        a->view.paused = 1;
    ui_status_clock(a);
    for (int k = 0; k < MODEL_N; k++)
        if (a->sim.m[k].stuck) {
            a->view.paused = 1;
            snprintf(a->view.status, sizeof a->view.status,
                     "the %s model cannot advance time at t=%.6f s (a zero-time loop): "
                     "give the program or `think` some time",
                     model_names[k], (double)a->sim.m[k].now / SEC);
        }
}

static int ui_frame(struct ui_app *a)
{
    int w, h;
    if (SDL_GetRendererOutputSize(a->g.r, &w, &h) < 0 || w < 64 || h < 64)
        return 0; /* minimised or tiny: skip */
    if (h != a->h && ui_gfx_resize(&a->g, h) < 0)
        return -1;
    a->w = w;
    a->h = h;
    ui_draw(&a->g, a->sim.m, &a->view, w, h);
    SDL_RenderPresent(a->g.r);
    return 0;
}

/* What ui_window returns when no window can be shown: the caller reports headless instead. */
#define UI_NO_WINDOW (-2)

/* Can this SDL video driver show a window? Not its offscreen or dummy driver: SDL falls back
 * to them when DISPLAY or WAYLAND_DISPLAY names no server, and a window there is never seen
 * (the program ran on, invisibly, for ever). */
static int ui_driver_shows(const char *driver)
{
    return driver && strcmp(driver, "offscreen") && strcmp(driver, "dummy");
}

/* The interactive window on paths[first]; 1-9 switch among paths. Returns an exit code, or
 * UI_NO_WINDOW (after a line on stderr) when none can be shown. */
static int ui_window(const char *const *paths, int npaths, int first, ui_load_fn load, void *ctx,
                     const struct ui_options *uo)
{
    struct ui_app *a = xcalloc(1, sizeof *a);
    a->paths = paths;
    a->npaths = npaths;
    a->load = load;
    a->ctx = ctx;
    a->uo = uo;
    a->speed_i = 5; /* x0.05: a request of 150 ms takes 3 s to watch */
    a->view = ui_view_at(0);
    a->view.paused = 0;
    a->view.speed = ui_speeds[a->speed_i];
    int rc = 1;
    SDL_SetHint(SDL_HINT_VIDEO_ALLOW_SCREENSAVER, "1");
    if (SDL_Init(SDL_INIT_VIDEO) < 0 || !ui_driver_shows(SDL_GetCurrentVideoDriver())) {
        fprintf(stderr, "sim: no window can be shown (%s): the report instead, as --headless\n",
                SDL_WasInit(SDL_INIT_VIDEO) ? "no display answers" : SDL_GetError());
        SDL_Quit();
        free(a);
        return UI_NO_WINDOW;
    }
    a->win = SDL_CreateWindow("Loom Lab", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED,
                              uo->width > 0 ? uo->width : 1280, uo->height > 0 ? uo->height : 800,
                              SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI);
    SDL_Renderer *r = a->win ? SDL_CreateRenderer(a->win, -1, SDL_RENDERER_PRESENTVSYNC) : NULL;
    if (a->win && !r)
        r = SDL_CreateRenderer(a->win, -1, 0);
    if (!r) {
        fprintf(stderr, "sim: cannot open the window (%s): the report instead, as --headless\n",
                SDL_GetError());
        rc = UI_NO_WINDOW;
        goto out;
    }
    SDL_GetRendererOutputSize(r, &a->w, &a->h);
    if (ui_gfx_init(&a->g, r, SDL_GetWindowPixelFormat(a->win), uo, a->h) < 0)
        goto out;
    if (ui_load(a, first) < 0)
        goto out;
    double frame = 1.0 / (uo->fps > 0 ? uo->fps : 60);
    a->last = ui_wall();
    while (!a->quit) {
        double t0 = ui_wall();
        SDL_Event e;
        while (SDL_PollEvent(&e))
            ui_on_event(a, &e);
        ui_tick(a);
        if (SDL_GetWindowFlags(a->win) & SDL_WINDOW_MINIMIZED) {
            SDL_WaitEventTimeout(NULL, 100);
            continue;
        }
        if (ui_frame(a) < 0)
            goto out;
        double left = frame - (ui_wall() - t0);
        if (left > 0)
            SDL_Delay((Uint32)(left * 1000));
    }
    rc = 0;
out:
    ui_sim_free(&a->sim);
    ui_gfx_free(&a->g);
    if (r)
        SDL_DestroyRenderer(r);
    if (a->win)
        SDL_DestroyWindow(a->win);
    SDL_Quit();
    free(a);
    return rc;
}

/* ==== Part VI. Command line and main ==== */

/* Tested by tests/test_cli.sh (exit codes, messages, byte-identical output) and
 * tests/test_sim.c (test_command_line). */

/* ---- VI.1 Options ---- */

/* What the command line asked for, typed: numbers and times are checked as they are parsed. */
struct options {
    const char *scenario; /* the first SCENARIO.scn */
    const char *more[8];  /* scenarios 2..9: keys 2-9 switch to them in the window */
    int nmore;
    const char *sets[128]; /* --set KEY=VALUE, in order (applied by sim_load) */
    int nsets;
    const char *seed;               /* --seed, checked like the scenario key it sets */
    int headless, json, csv, quiet; /* switches */
    const char *series, *trace, *calibration, *validate, *live;
    const char *server; /* --server for --validate: the rows of c or java */
    simtime at;         /* --at, -1 = the scenario's duration */
    const char *screenshot, *frames, *font;
    double fps;           /* --fps for --frames */
    int light;            /* --theme light */
    int width, height;    /* --size, 0 = 1280x800 */
    const char *sweep[2]; /* --sweep KEY=LIST, at most two (a grid) */
    int nsweep;
    const char *plot; /* --plot PNG for --sweep */
    int replications; /* --replications, 0 = the rule of sim_intervals */
    int batches;      /* --batches, 0 = none unless that rule asks */
};

/* How a flag's value is read; each type checks its value when it is parsed. */
enum opt_type {
    OPT_SWITCH, /* no value: sets an int to 1 */
    OPT_STRING, /* a path, URL or scenario value, kept as written */
    OPT_SET,    /* --set: appended to sets[] */
    OPT_TIME,   /* a time such as 5s, into a simtime */
    OPT_NUMBER, /* a number > 0, into a double */
    OPT_COUNT,  /* a whole number from 1 to 1000, into an int */
    OPT_SWEEP,  /* --sweep: appended to sweep[] (read by sweep_values) */
    OPT_THEME,  /* light or dark, into an int */
    OPT_SIZE,   /* WxH, into width and height */
    OPT_KEYS,   /* print the scenario keys and stop */
    OPT_HELP,   /* print the usage and stop */
};

/* One row per flag: the name, its value's name (NULL for none), how it is read, where it
 * goes, and its help. --help is generated from this table. */
struct opt_row {
    const char *flag, *arg;
    uint8_t type; /* enum opt_type */
    size_t off;   /* offset of the field in struct options */
    const char *help;
};

#define OO(field) offsetof(struct options, field)
static const struct opt_row opt_rows[] = {
    {"--headless", NULL, OPT_SWITCH, OO(headless),
     "print the report instead of opening the window"},
    {"--seed", "N", OPT_STRING, OO(seed), "random seed (default: the scenario's `seed`)"},
    {"--set", "KEY=VALUE", OPT_SET, 0, "override a scenario key, e.g. users=1000 (repeatable)"},
    {"--json", NULL, OPT_SWITCH, OO(json), "the report for machines instead of the table"},
    {"--replications", "N", OPT_COUNT, OO(replications),
     "independent runs, seeds derived from the seed; figures are their means with 95% "
     "intervals (default: 5 when the scenario's Little's-law bound x duration is at most "
     "500,000 requests a model, else one run with --batches 10)"},
    {"--sweep", "KEY=LIST", OPT_SWEEP, 0,
     "a report per value of any key: LIST is a,b,c or a..b*k (a, a*k, ... up to b; a unit "
     "may follow the numbers); twice for a grid. One row per point, both models, with their "
     "intervals; --csv, --json for machines"},
    {"--plot", "PNG", OPT_STRING, OO(plot),
     "with --sweep (one key): throughput, p99 and OS threads "
     "against the key, both models, their bounds dashed; with "
     "--validate: each series' predicted curve over users in its "
     "95% band, the measured points with their spread, or a "
     "timeline's served, failed and TIME_WAIT over time"},
    {"--batches", "K", OPT_COUNT, OO(batches),
     "one run, its window cut into K batches: 95% intervals from batch means"},
    {"--csv", NULL, OPT_SWITCH, OO(csv), "the report as CSV, a row per model"},
    {"--series", "FILE.csv", OPT_STRING, OO(series),
     "write the time series of both models (at most 1,000,000 rows a "
     "model, duration / sample_interval; a report alone keeps none)"},
    {"--trace", "FILE.json", OPT_STRING, OO(trace),
     "write a Chrome trace (open it in Perfetto): a lane per thread"},
    {"--calibration", "FILE", OPT_STRING, OO(calibration),
     "apply measured costs (./aggregator calibrate) over the scenario"},
    {"--live", "URL", OPT_STRING, OO(live),
     "poll a running ./aggregator's /metrics (http://127.0.0.1:PORT) and "
     "put it beside the scenario's prediction, once a second"},
    {"--at", "TIME", OPT_TIME, OO(at),
     "with --live: stop after TIME; with --screenshot: the frame's time "
     "(default: the scenario's duration)"},
    {"--validate", "FILE.csv", OPT_STRING, OO(validate),
     "simulate each point of ./aggregator bench's results and compare "
     "(with --calibration; --json for machines; no scenario needed); a timeline "
     "(bench --timeline, a t_s column): each cell second by second, the port wall"},
    {"--server", "c|java", OPT_STRING, OO(server),
     "with --validate: only the rows of this server (a CSV mixing them needs it)"},
    {"--screenshot", "F.png", OPT_STRING, OO(screenshot),
     "draw one frame at --at TIME (default: the end) without a display"},
    {"--frames", "DIR", OPT_STRING, OO(frames),
     "write DIR/frame_00000.png ... at --fps frames per simulated second"},
    {"--fps", "N", OPT_NUMBER, OO(fps), "frames per simulated second for --frames (default 30)"},
    {"--font", "PATH", OPT_STRING, OO(font),
     "TrueType font for the window (default DejaVu Sans Mono)"},
    {"--theme", "light|dark", OPT_THEME, OO(light), "light suits projectors (default dark)"},
    {"--size", "WxH", OPT_SIZE, 0,
     "window or image size in pixels (default 1280x800; at most "
     "256 MiB of pixels at 4 bytes each, e.g. 8192x8192)"},
    {"--quiet", NULL, OPT_SWITCH, OO(quiet), "no progress on stderr"},
    {"--keys", NULL, OPT_KEYS, 0, "list every scenario key with its default and allowed range"},
    {"--help", NULL, OPT_HELP, 0, "this text (also -h)"},
};
#define OPT_NROWS (sizeof opt_rows / sizeof opt_rows[0])

/* Help is wrapped to fit a terminal of OPT_COLUMNS: `text` goes on from column `indent`,
 * where the cursor is, its continuation lines start there too, and words are never split. */
#define OPT_COLUMNS 80
static void opt_wrap(FILE *out, const char *text, int indent)
{
    int col = indent;
    for (const char *p = text; *p;) {
        int n = (int)strcspn(p, " ");
        if (col > indent && col + 1 + n > OPT_COLUMNS)
            col = fprintf(out, "\n%*s", indent, "") - 1;
        else if (col > indent)
            col += fprintf(out, " ");
        col += fprintf(out, "%.*s", n, p);
        p += n + strspn(p + n, " ");
    }
    fputc('\n', out);
}

static void opt_usage(FILE *out)
{
    fputs("usage: ./sim [--headless] SCENARIO.scn [options]\n"
          "       ./sim --validate FILE.csv [--calibration FILE] [--server c|java]\n"
          "                               [--json] [--plot PNG]\n"
          "\n"
          "Simulates the scenario with platform threads (1:1, a Tomcat-like pool) and\n"
          "virtual threads (M:N, Loom) on the same workload, and reports them side by side.\n"
          "\n",
          out);
    for (size_t i = 0; i < OPT_NROWS; i++) {
        const struct opt_row *row = &opt_rows[i];
        char left[40];
        snprintf(left, sizeof left, "%s%s%s", row->flag, row->arg ? " " : "",
                 row->arg ? row->arg : "");
        fprintf(out, "  %-24s", left);
        opt_wrap(out, row->help, 26);
    }
}

static int opt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int opt_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sim: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(./sim --help for usage)\n");
    va_end(ap);
    return 2;
}

/* The largest picture --size may ask for: its pixels (4 bytes each) in bytes. SDL's
 * software renderer crashes, rather than fails, on a surface of some GiB (24000x24000). */
#define OPT_MAX_PIXEL_BYTES (256L << 20)
#define OPT_MAX_SIDE        16384

/* --size WxH: decimal sides from 64 to OPT_MAX_SIDE, at most OPT_MAX_PIXEL_BYTES of pixels. */
static int opt_size(const struct opt_row *row, const char *v, struct options *o)
{
    char *x = NULL, *end = NULL;
    errno = 0;
    long w = isdigit((unsigned char)*v) ? strtol(v, &x, 10) : -1;
    long h = w > 0 && *x == 'x' && isdigit((unsigned char)x[1]) ? strtol(x + 1, &end, 10) : -1;
    if (h < 0 || *end || errno || w < 64 || h < 64 || w > 1000000 || h > 1000000)
        return opt_fail("%s %s: want WIDTHxHEIGHT, e.g. 1280x800", row->flag, v);
    if (w * h * 4 > OPT_MAX_PIXEL_BYTES)
        return opt_fail("%s %s: %ld bytes of pixels, more than the limit of %ld MiB (e.g. "
                        "8192x8192)",
                        row->flag, v, w * h * 4, OPT_MAX_PIXEL_BYTES >> 20);
    if (w > OPT_MAX_SIDE || h > OPT_MAX_SIDE)
        return opt_fail("%s %s: a side of at most %d pixels", row->flag, v, OPT_MAX_SIDE);
    o->width = (int)w;
    o->height = (int)h;
    return 0;
}

/* A --sweep LIST into vals: "a,b,c" as written (no value empty, none twice), or "a..b*k", the
 * geometric range a, a*k, a*k^2, ... up to b (finite, 0 < a <= b, k > 1, at most
 * OPT_SWEEP_STEPS steps; rounded to whole numbers when a is one), with the unit that follows
 * a (b's must be the same). Returns the count (at least 1), or -1 with err. */
#define OPT_SWEEP_STEPS 1000
static int opt_sweep_values(const char *list, char vals[SWEEP_MAX][32], char *err, size_t errlen)
{
    const char *dots = strstr(list, ".."), *star = dots ? strchr(dots, '*') : NULL;
    int n = 0;
    if (!dots) {
        for (const char *p = list;; n++) {
            size_t len = strcspn(p, ",");
            if (n == SWEEP_MAX || len == 0 || len >= 32)
                return snprintf(err, errlen,
                                "want a,b,c: 1 to %d values of 1 to 31 characters, none empty",
                                SWEEP_MAX),
                       -1;
            snprintf(vals[n], 32, "%.*s", (int)len, p);
            for (int i = 0; i < n; i++)
                if (!strcmp(vals[i], vals[n]))
                    return snprintf(err, errlen, "'%.31s' is given twice", vals[n]), -1;
            if (!p[len])
                return n + 1;
            p += len + 1;
        }
    }
    char as[32], bs[32], *end_a, *end_b, *end_k = NULL, unit[16];
    snprintf(as, sizeof as, "%.*s", (int)(dots - list), list); /* "10." would eat a dot */
    snprintf(bs, sizeof bs, "%.*s", star ? (int)(star - dots - 2) : 0, dots + 2);
    double a = scn_strtod(as, &end_a), b = scn_strtod(bs, &end_b), k;
    snprintf(unit, sizeof unit, "%s", end_a);
    k = star ? scn_strtod(star + 1, &end_k) : NAN;
    if (!star || end_a == as || strcmp(end_b, unit) || end_k == star + 1 || *end_k ||
        !(a > 0 && b >= a && k > 1) || !isfinite(b) || !isfinite(k))
        return snprintf(err, errlen,
                        "want a..b*k with finite numbers, 0 < a <= b and k > 1, e.g. 10..10000*10"),
               -1;
    if (log(b / a) / log(k) > OPT_SWEEP_STEPS)
        return snprintf(err, errlen, "k = %.9g takes more than %d steps from %g to %g", k,
                        OPT_SWEEP_STEPS, a, b),
               -1;
    for (double x = a; x <= b * (1 + 1e-9); x *= k) {
        char v[32]; /* whole numbers stay whole (users); a value printed as the last is one */
        snprintf(v, sizeof v, "%.6g%s", a == floor(a) ? round(x) : x, unit);
        if (n && !strcmp(v, vals[n - 1]))
            continue;
        if (n == SWEEP_MAX)
            return snprintf(err, errlen, "more than %d values", SWEEP_MAX), -1;
        memcpy(vals[n++], v, sizeof v);
    }
    return n;
}

/* One --sweep KEY=LIST: its key (checked for a name, not a known key: sim_load does that)
 * and values. Returns the count of values, or -1 with err. */
static int opt_sweep_parse(const char *arg, char key[64], char vals[SWEEP_MAX][32], char *err,
                           size_t errlen)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || eq - arg >= 64)
        return snprintf(err, errlen, "want KEY=LIST, e.g. users=10,100,1000"), -1;
    snprintf(key, 64, "%.*s", (int)(eq - arg), arg);
    return opt_sweep_values(eq + 1, vals, err, errlen);
}

/* Read one flag's value into *o, typed and checked. Returns 0, or 2 after a message. */
static int opt_value(const struct opt_row *row, const char *v, struct options *o)
{
    void *field = (char *)o + row->off;
    char err[256], *end;
    const char *tail;
    double x;
    struct scn_src src = {row->flag, 0, err, sizeof err};
    switch (row->type) {
    case OPT_STRING:
        *(const char **)field = v;
        return 0;
    case OPT_SET:
        if (o->nsets == (int)(sizeof o->sets / sizeof o->sets[0]))
            return opt_fail("too many --set (%s)", v);
        o->sets[o->nsets++] = v;
        return 0;
    case OPT_TIME: /* as long as the longest duration, a day */
        if (scn_time(&src, v, &tail, &x) < 0 || *scn_skip_space(tail) || x > 86400e9)
            return opt_fail("%s %s: want a time from 0 to 86400s, such as 5s", row->flag, v);
        *(simtime *)field = (simtime)x;
        return 0;
    case OPT_NUMBER:
        errno = 0;
        x = scn_strtod(v, &end);
        if (end == v || *end || errno || !(x > 0 && x <= 1e6))
            return opt_fail("%s %s: want a number above 0", row->flag, v);
        *(double *)field = x;
        return 0;
    case OPT_SWEEP:
        if (o->nsweep == 2)
            return opt_fail("--sweep %s: at most two keys (a grid)", v);
        if (!strchr(v, '='))
            return opt_fail("--sweep %s: want KEY=LIST, e.g. users=10,100,1000", v);
        if (o->nsweep && !strncmp(o->sweep[0], v, (size_t)(strchr(v, '=') - v + 1)))
            return opt_fail("--sweep %s: the key is swept twice (a grid takes two keys)", v);
        o->sweep[o->nsweep++] = v;
        return 0;
    case OPT_COUNT:
        errno = 0;
        x = scn_strtod(v, &end);
        if (end == v || *end || errno || !(x >= 1 && x <= 1000) || x != floor(x))
            return opt_fail("%s %s: want a whole number from 1 to 1000", row->flag, v);
        *(int *)field = (int)x;
        return 0;
    case OPT_THEME:
        if (strcmp(v, "light") && strcmp(v, "dark"))
            return opt_fail("%s %s: want light or dark", row->flag, v);
        *(int *)field = !strcmp(v, "light");
        return 0;
    case OPT_SIZE:
        return opt_size(row, v, o);
    }
    return 0;
}

/* An unknown flag, with the nearest one if it looks like a slip. Returns 2. */
static int opt_unknown(const char *flag)
{
    struct scn_near near = {flag, NULL, 0};
    for (size_t r = 0; r < OPT_NROWS; r++)
        scn_near_offer(&near, opt_rows[r].flag);
    if (near.best)
        return opt_fail("unknown option '%s' (did you mean '%s'?)", flag, near.best);
    return opt_fail("unknown option '%s'", flag);
}

/* Parse argv into *o; returns 0, 1 for "done" (help, keys), or 2 on a bad flag. */
/* Outputs a mode does not write: refused (exit 2), never dropped. A sweep runs many
 * scenarios, where a series, a trace or a picture is one run's; a validation simulates the
 * rows of a CSV, not a scenario, and prints its own report. The mode first. */
static const char *const opt_exclusive[][2] = {
    {"--sweep", "--series"},        {"--sweep", "--trace"},     {"--sweep", "--screenshot"},
    {"--sweep", "--frames"},        {"--validate", "--series"}, {"--validate", "--trace"},
    {"--validate", "--screenshot"}, {"--validate", "--frames"}, {"--validate", "--sweep"},
    {"--validate", "--live"}};

/* Was this flag given? (A flag of opt_rows: its string set, or a --sweep.) */
static int opt_given(const struct options *o, const char *flag)
{
    for (size_t r = 0; r < OPT_NROWS; r++)
        if (!strcmp(flag, opt_rows[r].flag))
            return opt_rows[r].type == OPT_SWEEP
                       ? o->nsweep > 0
                       : !!*(const char *const *)((const char *)o + opt_rows[r].off);
    return 0;
}

/* The length of a frame's name in --frames DIR (ui_frames: 5 digits, UI_MAX_FRAMES). */
#define OPT_FRAME_LEN (sizeof "/frame_00000.png" - 1)

/* The combinations opt_exclusive refuses, and a --frames DIR too long for its frames' paths
 * (it would be cut, every frame written over one file). 0, or 2 after a message. */
static int opt_refused(const struct options *o)
{
    for (size_t i = 0; i < sizeof opt_exclusive / sizeof opt_exclusive[0]; i++)
        if (opt_given(o, opt_exclusive[i][0]) && opt_given(o, opt_exclusive[i][1]))
            return opt_fail("%s with %s: %s would be dropped (%s does not use it); run them apart",
                            opt_exclusive[i][1], opt_exclusive[i][0], opt_exclusive[i][1],
                            opt_exclusive[i][0]);
    if (o->frames && strlen(o->frames) + OPT_FRAME_LEN >= PATH_MAX)
        return opt_fail("--frames: a directory of %zu characters; its frames' paths would pass "
                        "the system's limit of %d",
                        strlen(o->frames), PATH_MAX - 1);
    return 0;
}

static int opt_parse(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->at = -1;
    o->fps = 30;
    for (int i = 1; i < argc; i++) {
        const char *a = !strcmp(argv[i], "-h") ? "--help" : argv[i];
        const struct opt_row *row = NULL;
        for (size_t r = 0; r < OPT_NROWS && !row; r++)
            if (!strcmp(a, opt_rows[r].flag))
                row = &opt_rows[r];
        if (row && row->type == OPT_HELP) {
            opt_usage(stdout);
            return 1;
        }
        if (row && row->type == OPT_KEYS) {
            scn_print_keys(stdout);
            return 1;
        }
        if (row && row->type == OPT_SWITCH) {
            *(int *)((char *)o + row->off) = 1;
        } else if (row) {
            if (i + 1 >= argc)
                return opt_fail("%s needs a value", a);
            if (opt_value(row, argv[++i], o))
                return 2;
        } else if (a[0] == '-') {
            return opt_unknown(a);
        } else if (!o->scenario) {
            o->scenario = a;
        } else if (o->nmore == (int)(sizeof o->more / sizeof o->more[0])) {
            return opt_fail("nine scenarios at most ('%s' is extra)", a);
        } else {
            o->more[o->nmore++] = a;
        }
    }
    if (!o->scenario && !o->validate)
        return opt_fail("%s", "no scenario file given");
    if (o->json && o->csv)
        return opt_fail("%s", "--json or --csv, not both");
    if (o->plot && !o->nsweep && !o->validate)
        return opt_fail("--plot %s draws a sweep: give --sweep KEY=LIST too (or --validate FILE)",
                        o->plot);
    return opt_refused(o);
}

/* The window opens when no report was asked for and a display is there. */
static int sim_window_wanted(const struct options *o)
{
    return !o->headless && !o->json && !o->csv && (getenv("DISPLAY") || getenv("WAYLAND_DISPLAY"));
}

/* Does this run keep the time series? Only what draws or writes it does: the window, a
 * screenshot or frames, --live, --series. A report alone keeps none: memory a long run does
 * not need. */
static int sim_keeps_series(const struct options *o)
{
    return o->series || o->live || o->screenshot || o->frames || sim_window_wanted(o);
}

/* A kept series must fit SERIES_MAX rows a model: a day sampled every millisecond would be
 * 86,400,000 rows, 16 GiB for the two models. */
static int sim_series_fits(const struct scenario *s, const char *path, char *err, size_t errlen)
{
    struct scn_src src = {path, 0, err, errlen};
    double rows = (double)(s->duration / s->sample_interval);
    if (rows <= SERIES_MAX)
        return 0;
    return scn_fail(&src,
                    "the time series would take %.1f GiB of memory (%.0f rows a model, at most "
                    "%d): set sample_interval to %.0fms or more (a report without --series keeps "
                    "no series)",
                    rows * 2 * sizeof(struct sample) / 1073741824.0, rows, SERIES_MAX,
                    ceil((double)s->duration / SERIES_MAX / MS));
}

/* Defaults, then the file at `path`, then each --set, then --seed, then the cross-key
 * checks. The window calls it again to restart or switch scenario. */
static int sim_load(struct scenario *s, const char *path, const struct options *o, char *err,
                    size_t errlen)
{
    scn_defaults(s);
    if (scn_load(s, path, err, errlen) < 0)
        return -1;
    if (o->calibration &&
        scn_load_keys(s, o->calibration, s->calibrated, sizeof s->calibrated, err, errlen) < 0)
        return -1;
    for (int i = 0; i < o->nsets; i++) {
        char buf[1024], label[1100], *key, *value;
        snprintf(buf, sizeof buf, "%s", o->sets[i]);
        snprintf(label, sizeof label, "--set %s", o->sets[i]);
        struct scn_src src = {label, 0, err, errlen};
        if (scn_split(buf, &key, &value) < 0)
            return scn_fail(&src, "want KEY=VALUE");
        if (scn_set(s, key, value, &src) < 0)
            return -1;
    }
    if (o->seed) {
        char label[64];
        snprintf(label, sizeof label, "--seed %.40s", o->seed);
        struct scn_src src = {label, 0, err, errlen};
        if (scn_set(s, "seed", o->seed, &src) < 0)
            return -1;
    }
    if (scn_finish(s, path, err, errlen) < 0)
        return -1;
    return sim_keeps_series(o) ? sim_series_fits(s, path, err, errlen) : 0;
}

/* sim_load for the window, which restarts and switches scenarios with the same options. */
static int sim_load_window(struct scenario *s, const char *path, void *o, char *err, size_t errlen)
{
    return sim_load(s, path, o, err, errlen);
}

/* ---- VI.2 Modes ---- */

/* Run one model to the end, with a progress line on a terminal. */
static void sim_run_model(struct model *m, int progress)
{
    if (!progress) {
        model_run(m, m->s->duration);
        return;
    }
    double next = wall_now() + 0.5;
    while (model_step(m, m->s->duration) >= 0)
        if ((m->stats.events & 0xfffff) == 0 && wall_now() > next) {
            fprintf(stderr, "\rsim: %s model at t = %.1f / %.1f s ", model_names[m->id],
                    (double)m->now / SEC, (double)m->s->duration / SEC);
            next = wall_now() + 0.5;
        }
    fprintf(stderr, "\r%60s\r", "");
}

/* How many replications and batches a report gets: --replications and --batches as given
 * (they are alternatives), else 5 replications when they are cheap (the Little's-law bound
 * times the duration, the most requests a model can serve, is at most REP_CHEAP), else one
 * run in 10 batches. Returns 0, or -1 after a message. */
#define REP_CHEAP 5e5
static int sim_intervals(const struct scenario *s, const struct options *o, int *reps, int *batches)
{
    if (o->replications > 1 && o->batches) {
        fprintf(stderr, "sim: --replications %d and --batches %d are alternatives: give one\n",
                o->replications, o->batches);
        return -1;
    }
    double most = rep_ideal_rps(s) * ((double)s->duration / SEC);
    int cheap = most <= REP_CHEAP;
    *reps = o->replications ? o->replications : o->batches || !cheap ? 1 : 5;
    *batches = o->batches ? o->batches : o->replications || cheap ? 0 : 10;
    if (*batches == 1)
        *batches = 0; /* one batch is the run itself */
    return 0;
}

/* A scenario that leaves `warmup` to the default gets the end of the warm-up found in the
 * first replication (rep_warmup; rounded up to a sample, at most half the run) when
 * it is later; not with --trace, which the first replication has written. Returns 1 when it
 * changed the warm-up (the replication is to run again). */
static int sim_warmup_auto(struct scenario *s, double found)
{
    simtime iv = s->sample_interval, w = (simtime)ceil(found * SEC / (double)iv) * iv;
    if (s->warmup_auto != 1 || w <= s->warmup || w > s->duration / 2)
        return 0;
    s->warmup = w;
    s->warmup_auto = 2;
    return 1;
}

/* One replication: both models run on scenario s; their results in res. The first one also
 * writes the trace and the time series (o). Returns 0, 2 for a zero-time loop (the scenario
 * is at fault, as with bad input), 1 on a failed write. */
static int sim_replication(const struct scenario *s, const struct options *o, int first,
                           int batches, struct trace *tr, struct report *rp,
                           struct result res[MODEL_N], double *found)
{
    struct model ms[MODEL_N] = {0}; /* a model after a stuck one is never made: s stays NULL */
    int rc = 0;
    for (int k = 0; k < MODEL_N && rc == 0; k++) {
        model_init(&ms[k], s, k);
        ms[k].keep_series = first && o->series != NULL;
        if (first && tr->f) {
            ms[k].on_span = trace_span;
            ms[k].observer = tr;
        }
        if (batches)
            model_batches(&ms[k], batches);
        sim_run_model(&ms[k], !o->quiet && isatty(2));
        if (ms[k].stuck) {
            fprintf(
                stderr,
                "sim: the %s model cannot advance time at t=%.9f s: requests take no time and\n"
                "users do not think (a zero-time loop); give the program or `think` some time\n",
                model_names[k], (double)ms[k].now / SEC);
            rc = 2;
        }
        rep_result(&ms[k], &res[k]);
        *found = fmax(*found, rep_warmup(&ms[k], (double)s->warmup / SEC));
    }
    if (rc == 0 && batches)
        rep_batched(rp, ms);
    if (rc == 0 && first && o->series && rep_series(o->series, ms) < 0)
        rc = 1;
    for (int k = 0; k < MODEL_N; k++)
        if (ms[k].s) /* a model after a stuck one was never made */
            model_free(&ms[k]);
    return rc;
}

/* The report of *s over its replications (or batches), with tr (its file may be NULL); *s
 * gets the warm-up rep_warmup found when the scenario left it to the default. The events
 * simulated go to *events. Returns 0, 1 on a failed write, 2 on bad flags or when stuck. */
static int sim_report(struct scenario *s, const struct options *o, struct trace *tr,
                      struct report *rp, double *events)
{
    int reps, batches, rc = 0;
    if (sim_intervals(s, o, &reps, &batches) < 0)
        return 2;
    struct result *runs = xrealloc(NULL, (size_t)reps * MODEL_N, sizeof *runs);
    double found = 0;
    for (int i = 0; i < reps && rc == 0; i++) {
        struct scenario si = *s;
        si.seed = rep_seed(s->seed, i);
        rc = sim_replication(&si, o, i == 0, batches, tr, rp, &runs[i * MODEL_N], &found);
        if (i == 0 && rc == 0 && !o->trace && sim_warmup_auto(s, found)) /* again from there */
            i = -1;
    }
    if (rc == 0 && !batches)
        rep_replicated(rp, runs, reps);
    *events = 0;
    for (int k = 0; k < reps * MODEL_N && rc == 0; k++)
        *events += runs[k].events;
    free(runs);
    return rc;
}

static int sim_headless(const struct scenario *scn, const struct options *o)
{
    struct report rp;
    struct trace tr = {0};
    struct scenario s = *scn;
    int reps, batches;
    double events, t0 = wall_now();
    if (sim_intervals(&s, o, &reps, &batches) < 0)
        return 2;
    if (o->trace && trace_open(&tr, o->trace) < 0)
        return 1;
    int rc = sim_report(&s, o, &tr, &rp, &events);
    if (rc) { /* stuck, or the series not written: no report of a run that did not end */
        trace_close(&tr);
        return rc;
    }
    double wall = wall_now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (o->json)
        rep_json(stdout, &s, o->scenario, &rp,
                 &(struct rep_engine){events, wall, ru.ru_maxrss * 1024L});
    else if (o->csv)
        rep_csv(stdout, &s, &rp);
    else
        rep_text(stdout, &s, o->scenario, &rp);
    if (rep_close(stdout, "the report to stdout") < 0)
        rc = 1;
    if (!o->json && !o->quiet)
        fprintf(stderr, "sim: %.0f events in %.3f s (%.2f M events/s), peak RSS %.1f MiB\n", events,
                wall, events / wall / 1e6, ru.ru_maxrss / 1024.0);
    if (trace_close(&tr) < 0)
        rc = 1;
    return rc;
}

/* --sweep's points into sw: each key's values (opt_sweep_values), every combination loaded
 * as if given by --set after the others. Returns 0, or -1 after a message. */
static int sim_sweep_points(const struct options *o, struct sweep *sw, struct options *po,
                            char sets[SWEEP_MAX][2][128])
{
    char vals[2][SWEEP_MAX][32], err[512];
    int nv[2] = {1, 1};
    sw->nkey = o->nsweep;
    for (int k = 0; k < o->nsweep; k++) {
        if ((nv[k] = opt_sweep_parse(o->sweep[k], sw->key[k], vals[k], err, sizeof err)) < 0) {
            fprintf(stderr, "sim: --sweep %s: %s\n", o->sweep[k], err);
            return -1;
        }
    }
    if (nv[0] * nv[1] > SWEEP_MAX || o->nsets + 2 > (int)(sizeof o->sets / sizeof o->sets[0])) {
        fprintf(stderr, "sim: --sweep: %d points, more than %d\n", nv[0] * nv[1], SWEEP_MAX);
        return -1;
    }
    *po = *o;
    po->series = po->trace = NULL;
    po->nsets = o->nsets + sw->nkey;
    for (sw->n = 0; sw->n < nv[0] * nv[1]; sw->n++) {
        for (int k = 0; k < sw->nkey; k++) {
            const char *v = vals[k][k ? sw->n % nv[1] : sw->n / nv[1]];
            snprintf(sw->val[sw->n][k], sizeof sw->val[sw->n][k], "%s", v);
            snprintf(sets[sw->n][k], sizeof sets[sw->n][k], "%s=%s", sw->key[k], v);
            po->sets[o->nsets + k] = sets[sw->n][k];
        }
        if (sim_load(&sw->s[sw->n], o->scenario, po, err, sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            return -1;
        }
    }
    return 0;
}

/* --sweep: a report per point, then the table (or CSV, JSON) and --plot's picture. */
static int sim_sweep(const struct options *o)
{
    struct sweep *sw = xcalloc(1, sizeof *sw);
    char(*sets)[2][128] = xcalloc(SWEEP_MAX, sizeof *sets);
    struct options po;
    struct trace none = {0};
    int rc = 0;
    if (o->plot && o->nsweep != 1) {
        fprintf(stderr, "sim: --plot draws one --sweep key, not a grid\n");
        rc = 2;
    }
    if (rc == 0 && sim_sweep_points(o, sw, &po, sets) < 0)
        rc = 2;
    for (int i = 0; i < sw->n && rc == 0; i++) {
        double events;
        rc = sim_report(&sw->s[i], &po, &none, &sw->rp[i], &events);
    }
    if (rc == 0) {
        if (o->json)
            rep_sweep_json(stdout, o->scenario, sw);
        else if (o->csv)
            rep_sweep_csv(stdout, sw);
        else
            rep_sweep_text(stdout, o->scenario, sw);
        rc = rep_close(stdout, "the sweep to stdout") < 0;
    }
    if (rc == 0 && o->plot) {
        struct ui_options uo = {
            .font = o->font, .light = o->light, .width = o->width, .height = o->height};
        rc = ui_sweep_png(sw, o->plot, &uo) < 0;
    }
    free(sets);
    free(sw);
    return rc;
}

/* --validate --plot: each series' predicted curve, then the picture. */
static int sim_validate_plot(const struct options *o, const struct val_point *p, int n)
{
    struct val_series *sr = xrealloc(NULL, VAL_SERIES_MAX, sizeof *sr);
    int ns = val_series_find(p, n, sr, VAL_SERIES_MAX), rc = 0;
    long ulo = LONG_MAX, uhi = 0;
    char err[512];
    for (int i = 0; i < n; i++)
        ulo = p[i].users < ulo ? p[i].users : ulo, uhi = p[i].users > uhi ? p[i].users : uhi;
    for (int k = 0; k < ns && rc == 0; k++)
        if (val_series_predict(&sr[k], p, n, ui_axis_wants_log((double)ulo, (double)uhi),
                               o->validate, o->calibration, o->sets, o->nsets, err,
                               sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            rc = 2;
        }
    const char *base = strrchr(o->validate, '/');
    struct ui_options uo = {
        .font = o->font, .light = o->light, .width = o->width, .height = o->height};
    if (rc == 0)
        rc = ui_validate_png(p, n, sr, ns, base ? base + 1 : o->validate, o->plot, &uo) < 0;
    free(sr);
    return rc;
}

/* --validate of a timeline: each cell predicted second by second, then --plot's picture. */
static int sim_timeline(const struct options *o)
{
    struct tl_cell *c = xcalloc(TL_MAX_CELLS, sizeof *c);
    int n = 0, rc = 0;
    char err[512];
    if (tl_read(o->validate, c, &n, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        rc = 2;
    }
    for (int i = 0; i < n && rc == 0; i++)
        if (tl_predict(&c[i], o->validate, o->calibration, o->sets, o->nsets, err, sizeof err) <
            0) {
            fprintf(stderr, "%s\n", err);
            rc = 2;
        }
    if (rc == 0 && o->json)
        tl_print_json(stdout, c, n);
    else if (rc == 0) {
        fprintf(stdout, "%s: measured against predicted, second by second\n", o->validate);
        for (int i = 0; i < n; i++)
            tl_print_cell(stdout, &c[i]);
    }
    if (rc == 0)
        rc = rep_close(stdout, "the timeline to stdout") < 0;
    if (rc == 0 && o->plot) {
        const char *base = strrchr(o->validate, '/');
        struct ui_options uo = {
            .font = o->font, .light = o->light, .width = o->width, .height = o->height};
        rc = ui_timeline_png(c, n, base ? base + 1 : o->validate, o->plot, &uo) < 0;
    }
    if (c)
        tl_free(c, n);
    free(c);
    return rc;
}

static int sim_validate(const struct options *o)
{
    struct val_point *points = NULL;
    int n = 0;
    char err[512];
    int server = -1;
    if (o->server)
        server = val_server_named(o->server);
    if (o->server && server < 0)
        return opt_fail("--server %s: want c or java", o->server);
    if (tl_is_timeline(o->validate))
        return sim_timeline(o);
    if (val_read_server(o->validate, server, &points, &n, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    val_auth_note(points, n, o->validate, o->calibration, o->sets, o->nsets);
    for (int i = 0; i < n; i++)
        if (val_simulate(&points[i], o->validate, o->calibration, o->sets, o->nsets, err,
                         sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            free(points);
            return 2;
        }
    if (o->json)
        val_print_json(stdout, points, n);
    else
        val_print_text(stdout, points, n);
    int rc = rep_close(stdout, "the results to stdout") < 0;
    if (rc == 0 && o->plot)
        rc = sim_validate_plot(o, points, n);
    free(points);
    return rc;
}

/* --at TIME, or the scenario's duration. */
static simtime sim_until(const struct scenario *s, const struct options *o)
{
    return o->at >= 0 ? o->at : s->duration;
}

/* The mean of a model's sampled series over (from, to]: what it predicts for one interval. */
static struct sample model_mean_sample(const struct model *m, simtime from, simtime to)
{
    struct sample mean = {0};
    int n = 0;
    for (int i = 0; i < m->nseries; i++) {
        const struct sample *x = &m->series[i];
        if (x->t <= from || x->t > to)
            continue;
        mean.rps += x->rps;
        mean.p99_ms += x->p99_ms;
        mean.os_threads += x->os_threads;
        mean.vt_parked += x->vt_parked;
        mean.thread_mem += x->thread_mem;
        mean.rss += x->rss;
        n++;
    }
    if (n) {
        mean.rps /= n;
        mean.p99_ms /= n;
        mean.os_threads /= n;
        mean.vt_parked /= n;
        mean.thread_mem /= n;
        mean.rss /= n;
    }
    return mean;
}

/* --live with the window or a screenshot: check the URL answers before drawing anything. */
static int sim_live_open(struct live *lv, const struct options *o)
{
    char err[512], *body;
    if (live_parse_url(lv, o->live, err, sizeof err) < 0) {
        fprintf(stderr, "sim: %s\n", err);
        return -1;
    }
    if (!(body = live_fetch(lv, err, sizeof err))) {
        fprintf(stderr, "sim: %s (is ./aggregator serve running there?)\n", err);
        return -1;
    }
    free(body);
    return 0;
}

/* --live --screenshot: measure for `at` of wall time, once a second. Returns the time the
 * measurement reached, or -1 on an error. */
static simtime sim_live_collect(struct live *lv, simtime at)
{
    char err[512];
    if (live_poll(lv, wall_now(), err, sizeof err) < 0) {
        fprintf(stderr, "sim: %s\n", err);
        return -1;
    }
    while (lv->n == 0 || lv->v[lv->n - 1].t * SEC < (double)at)
        if (live_next(lv, wall_now, err, sizeof err) < 0) {
            fprintf(stderr, "sim: %s\n", err);
            return -1;
        }
    return (simtime)(lv->v[lv->n - 1].t * SEC);
}

/* --live's columns after the time: measured, then predicted, of each figure. The table's
 * width and decimals; the CSV and JSON name. */
static const struct {
    const char *head, *name;
    int width, decimals;
} live_cols[] = {
    {"req/s", "rps", 9, 1},          {"predicted", "rps_predicted", 9, 1},
    {"p99 ms", "p99_ms", 9, 1},      {"predicted", "p99_ms_predicted", 9, 1},
    {"threads", "os_threads", 7, 0}, {"pred", "os_threads_predicted", 7, 0},
    {"parked", "vt_parked", 8, 0},   {"pred", "vt_parked_predicted", 8, 0},
    {"RSS MiB", "rss_mib", 8, 1},    {"pred", "rss_mib_predicted", 8, 1},
};
#define LIVE_NCOLS (sizeof live_cols / sizeof live_cols[0])

/* One row of --live: t and the columns' values, as a table row, CSV or a JSON line. A
 * table cell too wide for its column is printed in 3 significant digits. */
static void live_row(FILE *out, const struct options *o, double t, const double v[LIVE_NCOLS])
{
    fprintf(out, o->json ? "{\"t_s\": %.6g" : o->csv ? "%.6g" : "%6.1f", t);
    for (size_t i = 0; i < LIVE_NCOLS; i++) {
        int w = live_cols[i].width, d = live_cols[i].decimals;
        if (o->json)
            fprintf(out, ", \"%s\": %.6g", live_cols[i].name, v[i]);
        else if (o->csv)
            fprintf(out, ",%.6g", v[i]);
        else if (fabs(v[i]) < pow(10, w - d - 2))
            fprintf(out, "%s%*.*f", i % 2 ? " " : " | ", w, d, v[i]);
        else
            fprintf(out, "%s%*.3g", i % 2 ? " " : " | ", w, v[i]);
    }
    fputs(o->json ? "}\n" : "\n", out);
}

/* The header: a title and the columns' names (the table), or the names (CSV), or nothing
 * (JSON lines: every row names its fields). */
static void live_head(FILE *out, const struct options *o, int mode)
{
    if (o->json)
        return;
    if (o->csv) {
        fputs("t_s", out);
        for (size_t i = 0; i < LIVE_NCOLS; i++)
            fprintf(out, ",%s", live_cols[i].name);
        fputc('\n', out);
        return;
    }
    fprintf(out, "live %s (%s mode) beside %s, predicted by the %s model\n", o->live,
            model_names[mode], o->scenario, model_names[mode]);
    fprintf(out, "%6s", "t s");
    for (size_t i = 0; i < LIVE_NCOLS; i++)
        fprintf(out, "%s%*s", i % 2 ? " " : " | ", live_cols[i].width, live_cols[i].head);
    fputc('\n', out);
}

/* --live without a window: one row a second, measured beside predicted (--csv, --json). */
static int sim_live_text(const struct scenario *s, const struct options *o)
{
    struct live lv = {0};
    char err[512];
    simtime until = sim_until(s, o);
    if (live_parse_url(&lv, o->live, err, sizeof err) < 0) {
        fprintf(stderr, "sim: %s\n", err);
        return 2;
    }
    if (live_poll(&lv, wall_now(), err, sizeof err) < 0) {
        fprintf(stderr, "sim: %s (is ./aggregator serve running there?)\n", err);
        return 1;
    }
    struct model m;
    int mode = live_mode(&lv);
    model_init(&m, s, mode);
    m.keep_series = 1; /* model_mean_sample reads it */
    live_head(stdout, o, mode);
    int rc = 0;
    while (lv.n == 0 || lv.v[lv.n - 1].t * SEC < (double)until) {
        if (live_next(&lv, wall_now, err, sizeof err) < 0) {
            fprintf(stderr, "sim: %s\n", err);
            rc = 1;
            break;
        }
        const struct live_sample *x = &lv.v[lv.n - 1];
        simtime t = (simtime)(x->t * SEC), from = lv.n > 1 ? (simtime)(lv.v[lv.n - 2].t * SEC) : 0;
        model_run(&m, t);
        struct sample p = model_mean_sample(&m, from, t);
        double v[LIVE_NCOLS] = {
            x->rps,       p.rps,        x->p99_ms,   p.p99_ms,         x->os_threads,
            p.os_threads, x->vt_parked, p.vt_parked, x->rss / 1048576, (double)p.rss / 1048576};
        live_row(stdout, o, x->t, v);
        if (rep_close(stdout, "the rows to stdout") < 0) { /* only flushes stdout */
            rc = 1;
            break;
        }
    }
    model_free(&m);
    free(lv.v);
    return rc;
}

/* The window's options; with --live, the URL must answer before anything is drawn.
 * Returns 0, or -1 after a message. */
static int sim_ui_options(const struct options *o, struct live *lv, struct ui_options *uo)
{
    *uo = (struct ui_options){
        .font = o->font, .light = o->light, .width = o->width, .height = o->height};
    if (!o->live)
        return 0;
    uo->live = lv;
    return sim_live_open(lv, o);
}

/* --screenshot: one frame at --at, drawn without a display. */
static int sim_screenshot(const struct scenario *s, const struct options *o)
{
    struct live lv = {0};
    struct ui_options uo;
    if (sim_ui_options(o, &lv, &uo) < 0)
        return 1;
    simtime at = sim_until(s, o);
    int rc = 1;
    if (!o->live || (at = sim_live_collect(&lv, at)) >= 0)
        rc = ui_screenshot(s, at, o->screenshot, &uo);
    free(lv.v); /* also when the collection failed after some samples */
    return rc;
}

/* --frames: a PNG per frame, --fps frames per simulated second. */
static int sim_frames(const struct scenario *s, const struct options *o)
{
    struct live lv = {0};
    struct ui_options uo;
    if (sim_ui_options(o, &lv, &uo) < 0)
        return 1;
    int rc = ui_frames(s, o->frames, o->fps, &uo);
    free(lv.v);
    return rc;
}

/* The window on every scenario given; keys 1-9 switch among them. When no window can be
 * shown (a DISPLAY that names no server), the headless report of the first, as without one. */
static int sim_window(const struct scenario *s, const struct options *o)
{
    struct live lv = {0};
    struct ui_options uo;
    const char *paths[9] = {o->scenario};
    if (sim_ui_options(o, &lv, &uo) < 0)
        return 1;
    for (int i = 0; i < o->nmore; i++)
        paths[i + 1] = o->more[i];
    int rc = ui_window(paths, o->nmore + 1, 0, sim_load_window, (void *)o, &uo);
    free(lv.v);
    return rc == UI_NO_WINDOW ? sim_headless(s, o) : rc;
}

/* --font, when something will be drawn: read and checked before any simulation, so a file
 * that is not a system-installed font is bad input, exit 2. Returns 0 or 2 after a message. */
static int sim_font_check(const struct options *o)
{
    char err[512];
    unsigned char *ttf = NULL;
    if (o->font && (o->screenshot || o->frames || o->plot || sim_window_wanted(o)) &&
        !(ttf = ui_font_load(o->font, err, sizeof err)))
        return opt_fail("--font %s", err);
    free(ttf);
    return 0;
}

/* ---- VI.3 main ---- */

#ifndef SIM_NO_MAIN
int main(int argc, char **argv)
{
    struct options o;
    struct scenario s;
    char err[512];
    int rc = opt_parse(argc, argv, &o);
    if (rc == 1) /* --help or --keys printed: the write checked (> /dev/full fails) */
        return rep_close(stdout, "the text to stdout") < 0;
    if (rc)
        return rc;
    if ((rc = sim_font_check(&o)))
        return rc;
    if (o.validate)
        return sim_validate(&o);
    if (o.nsweep)
        return sim_sweep(&o);
    if (sim_load(&s, o.scenario, &o, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    int window = sim_window_wanted(&o);
    if (o.live && !window && !o.screenshot)
        return sim_live_text(&s, &o);
    if (o.screenshot)
        return sim_screenshot(&s, &o);
    if (o.frames)
        return sim_frames(&s, &o);
    if (window)
        return sim_window(&s, &o);
    return sim_headless(&s, &o);
}
#endif

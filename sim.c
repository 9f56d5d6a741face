/* sim.c -- Loom Lab's discrete-event simulator: platform threads vs virtual threads.
 *
 * WHAT IT IS
 *   A microservice aggregator under load, simulated twice on the same workload:
 *     platform  the 1:1 model of a Tomcat-like server: a bounded pool of OS threads, each
 *               request holding its thread for its whole life, blocked while it waits on
 *               downstream I/O, runnable threads time-sliced on C cores by the OS;
 *     virtual   the M:N model of Java 21's Loom: one virtual thread per request, mounted on
 *               `parallelism` carrier threads, parked (unmounted) while it waits on I/O,
 *               pinned to its carrier when it blocks inside `synchronized`.
 *   Both models see the same arrivals and the same sampled service times (common random
 *   numbers: every random draw of a request comes from a stream keyed by the request, not by
 *   the order of events), so a difference in the report is the execution model, not luck.
 *
 *   ./sim --headless scenarios/default.scn     side-by-side report (also --json, --csv)
 *   ./sim scenarios/default.scn                the animated window (see "Window")
 *   ./sim --keys                               every scenario key, documented
 *
 * UNITS
 *   Every time inside the simulator is an integer number of nanoseconds (simtime). Memory is
 *   in bytes. Rates are per second of simulated time.
 *
 * HOW THE PARTS FIT (sections, in file order)
 *   Data structures    scenario, program steps, requests, calls, threads, cores, model
 *   Random numbers     xoshiro256** for the engine, SplitMix64 streams per request (rng_)
 *   Distributions      const, uniform, exp, lognormal from p50/p99 (dist_)
 *   Histogram          log-linear buckets, 1/128 relative error (hist_)
 *   Event queue        binary heap ordered by (time, insertion order) (evq_)
 *   Scenario files     the key table, value parsers, program grammar, checks (scn_)
 *   Downstream         connection pools, ephemeral ports and TIME_WAIT, latency (svc_)
 *   OS scheduler       C cores, a FIFO run queue, time slices, context switches (cpu_)
 *   Requests           the step interpreter shared by both models (req_)
 *   Platform model     Tomcat's connector + thread pool executor (plat_)
 *   Virtual model      Loom's carriers, parking, pinning, compensation (vt_)
 *   Workload           closed-loop users or open-loop Poisson arrivals (wl_)
 *   Engine             sampling, one event, run to a time (model_)
 *   Reports            text table, JSON, CSV, time series, Chrome trace (rep_)
 *   Window             SDL2 + stb_truetype drawing, headless screenshots (ui_)
 *   Command line       flags and main
 *
 * THE CORE MODEL IN A FEW SENTENCES
 *   A request is a tiny program: cpu(d), call(service), io(d), sync { ... }, par(A,B,...).
 *   The interpreter (req_continue) walks it; whenever the request needs CPU it asks its
 *   model's ops table, and whenever it waits for I/O it asks the model to block it. The
 *   platform model answers "your OS thread sleeps in the kernel"; the virtual model answers
 *   "you unmount and park; the carrier runs someone else", unless the request is inside
 *   sync, where the carrier is pinned. Threads (pool workers or carriers) compete for cores
 *   in one OS scheduler. Everything else (queues, pools, ports) is shared code.
 *
 * HOW TO ADD A SCENARIO KEY
 *   Add a field to struct scenario and one row to scn_keys[]: name, type, field, default,
 *   doc. Parsing, --set, --keys and the docs all come from that row.
 */
#include <ctype.h>
#include <errno.h>
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int64_t simtime; /* nanoseconds of simulated time */
#define NS ((simtime)1)
#define US ((simtime)1000)
#define MS ((simtime)1000000)
#define SEC ((simtime)1000000000)

/* ==== Data structures ==== */

enum dist_kind { DIST_CONST, DIST_UNIFORM, DIST_EXP, DIST_LOGNORMAL };

/* A random duration. Parameters are in ns; lognormal keeps mu/sigma of ln(ns). */
struct dist {
    uint8_t kind;
    double a, b; /* const: a; uniform: [a,b); exp: mean a; lognormal: mu a, sigma b */
};

/* One step of a request's program. */
enum step_op {
    OP_CPU,        /* burn CPU for a sampled duration on the request's thread */
    OP_CALL,       /* one blocking downstream call (socket I/O: virtual threads park) */
    OP_PAR,        /* `nsvc` calls at once, then wait for all (structured fan-out) */
    OP_IO,         /* blocking the JDK compensates (Object.wait, file I/O): sampled time */
    OP_SYNC_BEGIN, /* enter `synchronized`: blocking in here pins a carrier (JDK 21) */
    OP_SYNC_END,
};

#define MAX_STEPS 64
#define MAX_SERVICES 16
#define MAX_PAR 16

struct step {
    uint8_t op;
    uint8_t nsvc;              /* OP_CALL: 1, OP_PAR: number of calls */
    uint8_t svc[MAX_PAR];      /* service indices for CALL/PAR */
    struct dist d;             /* OP_CPU, OP_IO */
};

/* A downstream service, as configured. */
struct service_cfg {
    char name[24];
    struct dist latency;  /* time the service takes to answer one call */
    int limit;            /* calls it serves at once, 0 = unlimited */
    int pool;             /* keep-alive connections in the caller's pool, 0 = new TCP per call */
    simtime connect_time; /* added to a call that opens a new connection */
    simtime timeout;      /* a call slower than this fails (504), 0 = never */
};

/* Everything a scenario file can say. Every field has one row in scn_keys[]. */
struct scenario {
    char name[64];
    uint64_t seed;
    simtime duration, warmup, sample_interval;
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
    int runtime_threads;     /* GC, JIT, acceptor, poller...: counted in both models */
    simtime ctx_switch;      /* CPU cost when a core switches to another OS thread */
    simtime timeslice;       /* the OS scheduler's quantum */
    simtime thread_create;   /* CPU cost of creating an OS thread */
    simtime wakeup;          /* CPU to return from a blocking call on an OS thread */
    long thread_stack_reserved; /* bytes of address space per OS thread (-Xss) */
    long thread_stack_rss;      /* bytes actually committed per OS thread */
    /* per-model costs of one implementation (set by calibration; 0 in teaching scenarios) */
    simtime cpu_per_request[2];  /* CPU to accept, parse and answer one request */
    simtime cpu_per_call[2];     /* CPU per downstream call: its syscalls, on the caller's thread */
    long mem_base;               /* process RSS with no load, bytes */
    long mem_per_request;        /* buffers per request in flight, bytes */
    /* platform model (Tomcat defaults) */
    int max_threads, min_spare, max_connections, accept_count, max_queue;
    simtime idle_timeout;
    /* virtual model (Loom defaults) */
    int parallelism, max_pool_size;
    simtime vt_create, vt_park, vt_unpark, carrier_keepalive;
    long vt_stack_bytes;
    int jep491; /* 1: synchronized no longer pins (JDK 24) */
    /* network */
    int port_low, port_high, tw_reuse;
    simtime time_wait;
    /* downstream services */
    struct service_cfg svc[MAX_SERVICES];
    int nsvc;
    char calibrated[1024]; /* keys set from a calibration file, comma-separated */
};

/* Why a request failed. X-macro: the enum and its names stay in step. */
#define FAIL_KINDS(X)                                                         \
    X(FAIL_REFUSED, "refused", "connection refused: maxConnections and acceptCount full") \
    X(FAIL_REJECTED, "rejected", "503: the executor's bounded queue was full")            \
    X(FAIL_NO_PORT, "no_port", "connect failed: ephemeral ports exhausted (TIME_WAIT)")    \
    X(FAIL_TIMEOUT, "timeout", "504: a downstream call timed out")
#define X_ENUM(e, name, doc) e,
enum fail_kind { FAIL_NONE = -1, FAIL_KINDS(X_ENUM) FAIL_N };
#define X_NAME(e, name, doc) name,
static const char *const fail_names[] = {FAIL_KINDS(X_NAME)};
#define X_DOC(e, name, doc) doc,
static const char *const fail_docs[] = {FAIL_KINDS(X_DOC)};

/* Where a request is in its program. */
enum req_phase {
    PH_START, /* about to begin step pc */
    PH_CPU,   /* running step pc's CPU burst */
    PH_PREBLOCK, /* paying the model's cost of blocking (parking) before step pc's I/O */
    PH_WAIT,  /* blocked in step pc's I/O */
};

/* A request in flight. Index-linked: never hold a pointer across an allocation.
 * Invariant: a request is in at most one FIFO at a time (backlog, executor queue, run queue). */
struct req {
    int32_t next;      /* intrusive FIFO link, -1 at the tail */
    int32_t thr;       /* platform: its OS thread; virtual: its carrier while mounted; else -1 */
    int32_t user;      /* closed loop: the user who sent it; -1 for open loop */
    uint16_t pc;       /* current step */
    uint8_t phase;     /* enum req_phase */
    int8_t fail;       /* enum fail_kind, FAIL_NONE while healthy */
    uint8_t sync_depth;/* nesting of sync { } */
    uint8_t pending;   /* downstream calls not yet answered */
    uint8_t parked;    /* virtual: unmounted and waiting for I/O */
    uint8_t pinned;    /* virtual: blocked while mounted (pinned or compensated) */
    uint8_t admitted;  /* holds one of the connector's maxConnections */
    uint64_t rng;      /* SplitMix64 state of the request's own stream */
    simtime arrived;   /* when it reached the server */
    simtime debt;      /* overhead CPU owed before the next step (creation, park, unpark) */
    uint32_t id;       /* shown in the window, "VT#512" / "req#512" */
};

/* A downstream call in flight. It waits in a pool's or service's FIFO on its own link, so a
 * fan-out request can wait in several queues at once. */
struct call {
    int32_t next;
    int32_t req;
    uint8_t svc;
    uint8_t timed_out;
    uint8_t new_conn; /* opened a TCP connection (no pooling, or pool growing) */
    simtime latency;  /* sampled when the step began, in program order (common random numbers) */
};

enum thr_state { THR_IDLE, THR_READY, THR_RUNNING, THR_BLOCKED, THR_NSTATES };
static const char *const thr_state_names[] = {"idle", "ready", "running", "blocked"};

/* An OS thread: a pool worker (platform) or a carrier (virtual). Slots of dead threads are
 * reused; `id` is never reused, so a student can follow "T#17". */
struct thr {
    int32_t next;      /* intrusive link: ready queue or idle list */
    int32_t req;       /* request it serves / virtual thread it carries, -1 if none */
    int32_t core;      /* core it runs on, -1 if none */
    uint8_t state;     /* enum thr_state */
    uint8_t alive;
    uint8_t extra;     /* virtual: a compensating carrier beyond parallelism */
    uint32_t id;
    uint32_t idle_gen; /* bumps when it leaves idle: stale idle-timeout events are ignored */
    simtime burst_left;/* CPU still wanted in the current burst */
    simtime since;     /* when it entered its state (for the trace and the window) */
};

/* A core. Invariant: thr >= 0 iff exactly one BURST_END event for this core is pending. */
struct core {
    int32_t thr;   /* thread running here, -1 if idle */
    int32_t last;  /* thread that ran here last: switching to another costs ctx_switch */
    simtime run;   /* length of the slice in progress, including the switch cost */
    simtime cpu;   /* the part of `run` that is the thread's own work */
};

/* An intrusive FIFO of indices into an array whose elements start with `int32_t next`. */
struct fifo {
    int32_t head, tail, len;
};

/* A downstream service as one model sees it: its queues, its pool, its ports. */
struct svc_state {
    int32_t in_service;    /* calls being served now */
    struct fifo wait_slot; /* calls waiting for the service's concurrency limit */
    int32_t conns_open, conns_busy; /* pooled keep-alive connections */
    struct fifo wait_conn; /* calls waiting for a pooled connection */
    int32_t ports_open;    /* local ports held by open connections */
    simtime *tw;           /* ring of TIME_WAIT expiry times, oldest first */
    int32_t tw_head, tw_len, tw_cap;
    uint64_t opened, calls, inflight;
};

/* A timestamped event. Ties are broken by insertion order, so runs are deterministic. */
struct event {
    simtime t;
    uint64_t order; /* insertion sequence << 8 | type */
    uint32_t a, b;
};

struct evq {
    struct event *heap;
    size_t len, cap;
    uint64_t seq;
};

/* A log-linear histogram: 128 exact buckets below 128 ns, then 128 per power of two. */
#define HIST_SUB 128
#define HIST_BUCKETS (HIST_SUB + 36 * HIST_SUB)
struct hist {
    uint64_t n;
    uint64_t max;
    uint32_t b[HIST_BUCKETS];
};

/* One row of the time series, sampled every sample_interval. */
struct sample {
    simtime t;
    double rps;          /* completions per second in the interval */
    double p99_ms;       /* p99 of the requests completed in the interval, 0 if none */
    double cpu_util;     /* busy core time / (cores * interval), 0..1 */
    int32_t os_threads;  /* runtime threads + pool threads or carriers */
    int32_t blocked;     /* OS threads blocked in the kernel */
    int32_t carriers_busy, vt_runnable, vt_parked, vt_pinned;
    int32_t queued;      /* requests waiting for a thread (executor queue / run queue) */
    int32_t in_flight, ports_tw, ports_open, conns_busy;
    int64_t thread_mem;  /* committed bytes of thread stacks */
    uint64_t failed;     /* failures so far */
};

enum model_kind { MODEL_PLATFORM, MODEL_VIRTUAL, MODEL_N };
static const char *const model_names[] = {"platform", "virtual"};

struct model;
/* What differs between the two execution models, as a table of operations. The request
 * interpreter calls these; everything else is shared. */
struct model_ops {
    void (*admit)(struct model *, int32_t r);           /* the connector accepted it */
    simtime (*block_cost)(struct model *, int32_t r, int op); /* CPU paid before blocking */
    void (*block)(struct model *, int32_t r, int op);   /* it waits for I/O */
    void (*wake)(struct model *, int32_t r);            /* its I/O completed */
    void (*release)(struct model *, int32_t r);         /* it left: free its thread */
};

/* Counters a model keeps, all over the whole run unless named _window. */
struct stats {
    uint64_t arrived, completed, failed[FAIL_N];
    uint64_t completed_window;  /* completed inside [warmup, duration] */
    uint64_t thread_creations, ctx_switches, parks, events;
    struct hist lat;            /* latency of requests completed in the window */
    double lat_sum;             /* their sum, in ns, for the mean */
    struct hist lat_interval;   /* the same, reset at each sample */
    uint64_t interval_done;
    simtime busy_ns, busy_at_sample;
    /* peaks */
    int32_t peak_os_threads, peak_carriers_busy, peak_vt_parked, peak_vt_pinned;
    int32_t peak_ports_tw, peak_queued, peak_in_flight, peak_blocked;
    int64_t peak_thread_mem, peak_thread_reserved;
    int64_t peak_rss;           /* mem.base + thread memory + in flight x mem.per_request */
};

struct trace; /* Chrome trace writer, see Reports */

/* One execution model simulating the scenario. The two models share nothing mutable. */
struct model {
    int kind;
    const struct scenario *s;
    const struct model_ops *ops;
    struct evq q;
    simtime now;
    /* requests and calls: growable arrays with free lists */
    struct req *req; int32_t nreq, capreq, free_req;
    struct call *call; int32_t ncall, capcall, free_call;
    /* OS threads (workers or carriers) and cores */
    struct thr *thr; int32_t nthr, capthr, free_thr;
    struct core *core;
    struct fifo ready;       /* threads waiting for a core */
    struct fifo idle;        /* idle threads, FIFO like Java's LinkedBlockingQueue waiters */
    int32_t thr_state_n[THR_NSTATES], threads_alive, next_thread_id;
    int32_t ports_tw;        /* ports in TIME_WAIT, all services (sum of svc[].tw_len) */
    /* connector */
    int32_t conns;           /* connections held by requests in the server */
    int32_t in_flight;       /* arrived and not yet completed or failed */
    struct fifo backlog;     /* accepted by the kernel, not yet by the server (acceptCount) */
    /* platform: the executor's queue; virtual: the scheduler's run queue */
    struct fifo queue;
    struct fifo todo;        /* requests to continue after the current event (see model_defer) */
    /* virtual */
    int32_t vt_alive, vt_parked, vt_pinned, carriers_busy, carriers_compensating;
    /* downstream */
    struct svc_state svc[MAX_SERVICES];
    /* workload */
    uint32_t *user_iter;     /* closed loop: requests each user has sent */
    uint64_t arrival_index;  /* open loop: requests generated */
    uint64_t arrival_rng[4]; /* open loop: xoshiro256** state for inter-arrival gaps */
    uint32_t next_req_id;
    /* time series */
    struct sample *series; int32_t nseries, capseries;
    struct stats st;
    /* engine bookkeeping */
    simtime last_t; uint64_t same_t_events;
    int stuck;               /* 1: time stopped advancing (see model_step) */
    struct trace *trace;
};

/* ==== Random numbers ==== */

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
    return rng_mix(rng_mix(seed ^ 0x5851f42d4c957f2dull) + rng_mix(a + 0x632be59bd9b4e019ull) * 31 + b);
}

/* xoshiro256**, for the few streams that are not per request (open-loop gaps). */
static uint64_t rng_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_xoshiro(uint64_t s[4])
{
    uint64_t result = rng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rng_rotl(s[3], 45);
    return result;
}

static void rng_xoshiro_seed(uint64_t s[4], uint64_t seed)
{
    for (int i = 0; i < 4; i++) s[i] = rng_splitmix(&seed);
}

/* A uniform double in the open interval (0,1): never 0, so log() is safe. */
static double rng_unit(uint64_t x) { return ((double)(x >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

/* ==== Distributions ==== */

/* Inverse of the standard normal CDF (Acklam's rational approximation, |rel err| < 1.2e-9).
 * One uniform in, one normal out: every sample costs the same number of draws, which keeps
 * the two models' streams aligned. */
static double dist_probit(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                               1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01, -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                               -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
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
    switch (d->kind) {
    case DIST_UNIFORM: x = d->a + (d->b - d->a) * u; break;
    case DIST_EXP: x = -d->a * log(u); break;
    case DIST_LOGNORMAL: x = exp(d->a + d->b * dist_probit(u)); break;
    default: x = d->a; break;
    }
    return x < 0 ? 0 : x > 1e15 ? (simtime)1e15 : (simtime)(x + 0.5);
}

static double dist_mean(const struct dist *d)
{
    switch (d->kind) {
    case DIST_UNIFORM: return (d->a + d->b) / 2;
    case DIST_EXP: return d->a;
    case DIST_LOGNORMAL: return exp(d->a + d->b * d->b / 2);
    default: return d->a;
    }
}

/* ==== Histogram ==== */

static int hist_bucket(uint64_t v)
{
    if (v < HIST_SUB) return (int)v;
    int e = 63 - __builtin_clzll(v); /* e >= 7 */
    int i = HIST_SUB + (e - 7) * HIST_SUB + (int)((v >> (e - 7)) - HIST_SUB);
    return i < HIST_BUCKETS ? i : HIST_BUCKETS - 1;
}

/* The midpoint of a bucket: within 1/256 of any value that falls in it. */
static double hist_value(int i)
{
    if (i < HIST_SUB) return i;
    int e = (i - HIST_SUB) / HIST_SUB + 7, sub = (i - HIST_SUB) % HIST_SUB + HIST_SUB;
    double width = ldexp(1.0, e - 7);
    return sub * width + width / 2;
}

static void hist_add(struct hist *h, uint64_t v)
{
    h->b[hist_bucket(v)]++;
    h->n++;
    if (v > h->max) h->max = v;
}

/* The q-quantile (0 < q <= 1) in the histogram's unit, 0 when empty. */
static double hist_quantile(const struct hist *h, double q)
{
    if (h->n == 0) return 0;
    uint64_t want = (uint64_t)ceil(q * (double)h->n), seen = 0;
    if (want < 1) want = 1;
    for (int i = 0; i < HIST_BUCKETS; i++)
        if ((seen += h->b[i]) >= want) {
            double v = hist_value(i);
            return v > (double)h->max ? (double)h->max : v;
        }
    return (double)h->max;
}

/* ==== Event queue ==== */

enum ev_type {
    EV_ARRIVE,      /* a: user (closed loop) or unused (open loop) */
    EV_BURST_END,   /* a: core */
    EV_IO_DONE,     /* a: call */
    EV_IO_STEP_DONE,/* a: request whose io(d) step finished */
    EV_IDLE_CHECK,  /* a: thread, b: its idle_gen when it became idle */
    EV_SAMPLE,
};

static int evq_less(const struct event *x, const struct event *y)
{
    return x->t < y->t || (x->t == y->t && x->order < y->order);
}

static void evq_push(struct evq *q, simtime t, int type, uint32_t a, uint32_t b)
{
    if (q->len == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 1024;
        q->heap = realloc(q->heap, q->cap * sizeof *q->heap);
        if (!q->heap) { perror("sim: event queue"); exit(1); }
    }
    struct event e = {t, (q->seq++ << 8) | (uint64_t)type, a, b};
    size_t i = q->len++;
    while (i > 0) { /* sift up */
        size_t parent = (i - 1) / 2;
        if (!evq_less(&e, &q->heap[parent])) break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = e;
}

static struct event evq_pop(struct evq *q)
{
    struct event top = q->heap[0], last = q->heap[--q->len];
    size_t i = 0, n = q->len;
    for (;;) { /* sift the last element down from the root */
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && evq_less(&q->heap[child + 1], &q->heap[child])) child++;
        if (!evq_less(&q->heap[child], &last)) break;
        q->heap[i] = q->heap[child];
        i = child;
    }
    if (n) q->heap[i] = last;
    return top;
}

static int ev_type_of(const struct event *e) { return (int)(e->order & 0xff); }

/* ==== Scenario files ==== */

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
 */

enum key_type { K_STR, K_U64, K_INT, K_LONG, K_DOUBLE, K_TIME, K_DIST, K_BYTES, K_BOOL, K_PROGRAM };

struct scn_key {
    const char *name;
    uint8_t type;
    size_t off;       /* offset in struct scenario (or struct service_cfg for service keys) */
    const char *def;  /* default, parsed by the same code as a file's value */
    double min, max;  /* allowed range of numbers (times in ns, bytes) */
    const char *doc;
};

#define SK(field) offsetof(struct scenario, field)
static const struct scn_key scn_keys[] = {
    {"name", K_STR, SK(name), "unnamed", 0, 0, "title shown in reports and the window"},
    {"seed", K_U64, SK(seed), "1", 0, 0, "random seed; the same seed gives byte-identical output"},
    {"duration", K_TIME, SK(duration), "10s", 1e6, 86400e9, "simulated time; no arrivals after it"},
    {"warmup", K_TIME, SK(warmup), "1s", 0, 86400e9, "statistics ignore requests that complete before it"},
    {"sample_interval", K_TIME, SK(sample_interval), "100ms", 1e6, 3600e9, "time-series resolution"},
    {"users", K_LONG, SK(users), "100", 0, 10e6, "closed loop: concurrent users (0 = open loop at `rate`)"},
    {"rate", K_DOUBLE, SK(rate), "0", 0, 10e6, "open loop: Poisson arrivals per second"},
    {"think", K_DIST, SK(think), "0", 0, 3600e9, "closed loop: a user's pause between an answer and its next request"},
    {"rampup", K_TIME, SK(rampup), "0", 0, 3600e9, "closed loop: users start evenly spread over this time"},
    {"retry_after", K_TIME, SK(retry_after), "1s", 1e3, 3600e9, "a user whose request failed waits this long more before retrying"},
    {"program", K_PROGRAM, SK(program_text), "cpu(100us) call(A) call(B) call(C) cpu(50us)", 0, 0, "what each request does (see FORMAT)"},
    {"cores", K_INT, SK(cores), "2", 1, 1024, "CPU cores C of the server"},
    {"runtime_threads", K_INT, SK(runtime_threads), "22", 0, 10000, "JVM's own threads (GC, JIT, acceptor, poller), counted in both models"},
    {"os.ctx_switch", K_TIME, SK(ctx_switch), "3us", 0, 1e9, "CPU cost of switching a core to another OS thread"},
    {"os.timeslice", K_TIME, SK(timeslice), "3ms", 1e4, 1e10, "OS scheduler quantum before a runnable thread is preempted"},
    {"os.wakeup", K_TIME, SK(wakeup), "2us", 0, 1e9, "CPU a platform thread spends returning from a blocking call (the kernel wakes it)"},
    {"os.thread_create", K_TIME, SK(thread_create), "50us", 0, 1e9, "CPU cost of creating an OS thread"},
    {"os.stack_reserved", K_BYTES, SK(thread_stack_reserved), "1MiB", 4096, 1e10, "address space reserved per OS thread (-Xss)"},
    {"os.stack_rss", K_BYTES, SK(thread_stack_rss), "64KiB", 0, 1e10, "memory committed per OS thread (touched stack, TLS, kernel)"},
    {"platform.cpu_per_request", K_TIME, SK(cpu_per_request[0]), "0", 0, 1e9, "platform: CPU per request beyond its program (accept, parse, answer)"},
    {"platform.cpu_per_call", K_TIME, SK(cpu_per_call[0]), "0", 0, 1e9, "platform: CPU per downstream call beyond its program (socket syscalls)"},
    {"virtual.cpu_per_request", K_TIME, SK(cpu_per_request[1]), "0", 0, 1e9, "virtual: CPU per request beyond its program"},
    {"virtual.cpu_per_call", K_TIME, SK(cpu_per_call[1]), "0", 0, 1e9, "virtual: CPU per downstream call beyond its program (syscalls, epoll)"},
    {"mem.base", K_BYTES, SK(mem_base), "0", 0, 1e12, "process RSS with no load (for the predicted RSS)"},
    {"mem.per_request", K_BYTES, SK(mem_per_request), "0", 0, 1e9, "memory per request in flight: buffers, connection (predicted RSS)"},
    {"platform.max_threads", K_INT, SK(max_threads), "200", 1, 100000, "Tomcat maxThreads: the pool's ceiling"},
    {"platform.min_spare", K_INT, SK(min_spare), "10", 0, 100000, "Tomcat minSpareThreads: threads created at start and never retired"},
    {"platform.max_connections", K_INT, SK(max_connections), "8192", 1, 10000000, "Tomcat maxConnections (both models)"},
    {"platform.accept_count", K_INT, SK(accept_count), "100", 0, 10000000, "Tomcat acceptCount: listen backlog beyond maxConnections (both models)"},
    {"platform.max_queue", K_INT, SK(max_queue), "0", 0, 10000000, "executor queue bound, 0 = unbounded as in Tomcat; beyond it 503"},
    {"platform.idle_timeout", K_TIME, SK(idle_timeout), "60s", 1e6, 86400e9, "a pool thread idle this long exits (down to min_spare)"},
    {"virtual.parallelism", K_INT, SK(parallelism), "0", 0, 1024, "carriers (0 = cores, as the JDK)"},
    {"virtual.max_pool_size", K_INT, SK(max_pool_size), "256", 1, 32767, "carriers at most, counting compensation for io()"},
    {"virtual.create", K_TIME, SK(vt_create), "1us", 0, 1e9, "CPU cost of starting a virtual thread"},
    {"virtual.park", K_TIME, SK(vt_park), "1us", 0, 1e9, "CPU cost of unmounting and parking (freezing the stack)"},
    {"virtual.unpark", K_TIME, SK(vt_unpark), "1us", 0, 1e9, "CPU cost of unparking and mounting again (thawing)"},
    {"virtual.carrier_keepalive", K_TIME, SK(carrier_keepalive), "30s", 1e6, 86400e9, "an idle compensating carrier exits after this"},
    {"virtual.stack_bytes", K_BYTES, SK(vt_stack_bytes), "5KiB", 0, 1e9, "heap memory per virtual thread (its stack chunks)"},
    {"virtual.jep491", K_BOOL, SK(jep491), "0", 0, 1, "1 = JDK 24: blocking in synchronized unmounts instead of pinning"},
    {"net.port_low", K_INT, SK(port_low), "32768", 1, 65535, "ephemeral port range, low end"},
    {"net.port_high", K_INT, SK(port_high), "60999", 1, 65535, "ephemeral port range, high end"},
    {"net.time_wait", K_TIME, SK(time_wait), "60s", 0, 3600e9, "how long a closed connection's port stays in TIME_WAIT"},
    {"net.tw_reuse", K_BOOL, SK(tw_reuse), "0", 0, 1, "1 = tcp_tw_reuse: a TIME_WAIT port older than 1 s may be reused"},
};
#define SCN_NKEYS (sizeof scn_keys / sizeof scn_keys[0])

#define SVK(field) offsetof(struct service_cfg, field)
static const struct scn_key svc_keys[] = {
    {"latency", K_DIST, SVK(latency), "50ms", 0, 3600e9, "time the service takes to answer one call"},
    {"limit", K_INT, SVK(limit), "0", 0, 10000000, "calls the service serves at once (0 = unlimited); more wait"},
    {"pool", K_INT, SVK(pool), "10000", 0, 1000000, "keep-alive connections per model, opened on demand (0 = a new TCP connection per call)"},
    {"connect_time", K_TIME, SVK(connect_time), "100us", 0, 1e10, "added to a call that opens a new TCP connection"},
    {"timeout", K_TIME, SVK(timeout), "0", 0, 3600e9, "a call slower than this fails the request (0 = never)"},
};
#define SVC_NKEYS (sizeof svc_keys / sizeof svc_keys[0])

/* Where a value came from, for `file:line: message`. */
struct scn_src {
    const char *file;
    int line;
    char *err;     /* message buffer */
    size_t errlen;
};

static int scn_fail(const struct scn_src *src, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int scn_fail(const struct scn_src *src, const char *fmt, ...)
{
    int n = src->line > 0 ? snprintf(src->err, src->errlen, "%s:%d: ", src->file, src->line)
                          : snprintf(src->err, src->errlen, "%s: ", src->file);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < src->errlen) vsnprintf(src->err + n, src->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *scn_skip_space(const char *p)
{
    while (isspace((unsigned char)*p)) p++;
    return p;
}

/* A number followed by a unit from `units`; *end is left after the unit. */
struct unit { const char *name; double scale; };
static const struct unit time_units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"min", 60e9}, {0, 0}};
static const struct unit byte_units[] = {{"B", 1}, {"KiB", 1024}, {"MiB", 1048576}, {"GiB", 1073741824.0},
                                         {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {0, 0}};

static int scn_number_unit(const char *p, const char **end, const struct unit *units, double *out)
{
    char *e;
    errno = 0;
    double v = strtod(p, &e);
    if (e == p || errno || !isfinite(v)) return -1;
    const char *u = e;
    size_t len = 0;
    while (isalpha((unsigned char)u[len])) len++;
    if (len == 0) {
        if (v != 0) return -1; /* only 0 may omit its unit */
        *out = 0, *end = u;
        return 0;
    }
    for (const struct unit *un = units; un->name; un++)
        if (strlen(un->name) == len && strncmp(un->name, u, len) == 0) {
            *out = v * un->scale, *end = u + len;
            return 0;
        }
    return -1;
}

static int scn_time(const struct scn_src *src, const char *p, const char **end, double *ns)
{
    if (scn_number_unit(scn_skip_space(p), end, time_units, ns) < 0)
        return scn_fail(src, "bad time '%.40s' (want e.g. 250us, 50ms, 1.5s)", scn_skip_space(p));
    if (*ns < 0) return scn_fail(src, "negative time '%.40s'", scn_skip_space(p));
    return 0;
}

/* dist := TIME | const(TIME) | uniform(TIME, TIME) | exp(TIME) | lognormal(TIME, TIME) */
static int scn_dist(const struct scn_src *src, const char *p, const char **end, struct dist *d)
{
    static const struct { const char *name; uint8_t kind, nargs; } forms[] = {
        {"const", DIST_CONST, 1}, {"uniform", DIST_UNIFORM, 2}, {"exp", DIST_EXP, 1}, {"lognormal", DIST_LOGNORMAL, 2}};
    p = scn_skip_space(p);
    if (isdigit((unsigned char)*p) || *p == '.') {
        double v;
        if (scn_time(src, p, end, &v) < 0) return -1;
        *d = (struct dist){DIST_CONST, v, 0};
        return 0;
    }
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        size_t n = strlen(forms[f].name);
        if (strncmp(p, forms[f].name, n) != 0 || *scn_skip_space(p + n) != '(') continue;
        double arg[2] = {0, 0};
        const char *q = scn_skip_space(p + n) + 1;
        for (int i = 0; i < forms[f].nargs; i++) {
            if (i > 0) {
                q = scn_skip_space(q);
                if (*q != ',') return scn_fail(src, "%s() takes %d times", forms[f].name, forms[f].nargs);
                q++;
            }
            if (scn_time(src, q, &q, &arg[i]) < 0) return -1;
        }
        q = scn_skip_space(q);
        if (*q != ')') return scn_fail(src, "%s() takes %d time%s, then ')'", forms[f].name, forms[f].nargs,
                                       forms[f].nargs > 1 ? "s" : "");
        *end = q + 1;
        d->kind = forms[f].kind;
        if (d->kind == DIST_LOGNORMAL) {
            if (arg[0] <= 0 || arg[1] < arg[0])
                return scn_fail(src, "lognormal(p50, p99) needs 0 < p50 <= p99");
            d->a = log(arg[0]), d->b = (log(arg[1]) - log(arg[0])) / Z99;
        } else {
            if (d->kind == DIST_UNIFORM && arg[1] < arg[0])
                return scn_fail(src, "uniform(low, high) needs low <= high");
            d->a = arg[0], d->b = arg[1];
        }
        return 0;
    }
    return scn_fail(src, "bad distribution '%.40s' (want 5ms, uniform(a,b), exp(mean), lognormal(p50,p99))", p);
}

static int scn_find_service(struct scenario *s, const char *name, size_t len, int create)
{
    for (int i = 0; i < s->nsvc; i++)
        if (strlen(s->svc[i].name) == len && strncmp(s->svc[i].name, name, len) == 0) return i;
    if (!create || s->nsvc == MAX_SERVICES || len == 0 || len >= sizeof s->svc[0].name) return -1;
    return s->nsvc++;
}

static int scn_ident(const char *p)
{
    int n = 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '-') n++;
    return n;
}

/* Recursive descent over the program grammar; appends steps to s->prog. */
static int scn_program_items(struct scenario *s, const struct scn_src *src, const char **pp, int depth);

static int scn_emit(struct scenario *s, const struct scn_src *src, struct step st)
{
    if (s->nsteps == MAX_STEPS) return scn_fail(src, "program longer than %d steps", MAX_STEPS);
    s->prog[s->nsteps++] = st;
    return 0;
}

static int scn_program_item(struct scenario *s, const struct scn_src *src, const char **pp, int depth)
{
    const char *p = scn_skip_space(*pp);
    int n = scn_ident(p), first = s->nsteps;
    struct step st = {0};
    if (n == 4 && strncmp(p, "sync", 4) == 0) {
        p = scn_skip_space(p + 4);
        if (*p != '{') return scn_fail(src, "sync needs '{'");
        p++;
        if (depth > 8) return scn_fail(src, "sync nested too deep");
        if (scn_emit(s, src, (struct step){.op = OP_SYNC_BEGIN}) < 0) return -1;
        if (scn_program_items(s, src, &p, depth + 1) < 0) return -1;
        p = scn_skip_space(p);
        if (*p != '}') return scn_fail(src, "sync block not closed with '}'");
        p++;
        if (scn_emit(s, src, (struct step){.op = OP_SYNC_END}) < 0) return -1;
    } else if ((n == 3 && (!strncmp(p, "cpu", 3) || !strncmp(p, "par", 3))) || (n == 2 && !strncmp(p, "io", 2)) ||
               (n == 4 && !strncmp(p, "call", 4))) {
        const char *word = p;
        p = scn_skip_space(p + n);
        if (*p != '(') return scn_fail(src, "%.*s needs '('", n, word);
        p++;
        if (*word == 'c' && word[1] == 'p' ) st.op = OP_CPU;
        else if (*word == 'i') st.op = OP_IO;
        else st.op = *word == 'p' ? OP_PAR : OP_CALL;
        if (st.op == OP_CPU || st.op == OP_IO) {
            if (scn_dist(src, p, &p, &st.d) < 0) return -1;
        } else {
            for (;;) {
                p = scn_skip_space(p);
                int len = scn_ident(p);
                if (len == 0) return scn_fail(src, "%.*s() needs a service name", n, word);
                if (st.nsvc == MAX_PAR || (st.op == OP_CALL && st.nsvc == 1))
                    return scn_fail(src, "too many services in %.*s()", n, word);
                int k = scn_find_service(s, p, (size_t)len, 1);
                if (k < 0) return scn_fail(src, "too many services (at most %d) or bad name '%.*s'", MAX_SERVICES, len, p);
                if (!s->svc[k].name[0]) memcpy(s->svc[k].name, p, (size_t)len);
                st.svc[st.nsvc++] = (uint8_t)k;
                p = scn_skip_space(p + len);
                if (*p != ',') break;
                p++;
            }
        }
        p = scn_skip_space(p);
        if (*p != ')') return scn_fail(src, "expected ')' at '%.20s'", p);
        p++;
        if (scn_emit(s, src, st) < 0) return -1;
    } else {
        return scn_fail(src, "unknown program step '%.20s' (want cpu, call, par, io, sync)", p);
    }
    p = scn_skip_space(p);
    if (*p == '*') { /* item*COUNT repeats the steps just emitted */
        char *e;
        long count = strtol(p + 1, &e, 10);
        if (e == p + 1 || count < 1 || count > MAX_STEPS) return scn_fail(src, "bad repeat count after '*'");
        int len = s->nsteps - first;
        for (long c = 1; c < count; c++)
            for (int i = 0; i < len; i++)
                if (scn_emit(s, src, s->prog[first + i]) < 0) return -1;
        p = e;
    }
    *pp = p;
    return 0;
}

static int scn_program_items(struct scenario *s, const struct scn_src *src, const char **pp, int depth)
{
    for (;;) {
        const char *p = scn_skip_space(*pp);
        if (*p == 0 || *p == '}') { *pp = p; return 0; }
        if (scn_program_item(s, src, pp, depth) < 0) return -1;
    }
}

static int scn_program(struct scenario *s, const struct scn_src *src, const char *text)
{
    s->nsteps = 0;
    const char *p = text;
    if (scn_program_items(s, src, &p, 0) < 0) return -1;
    if (*p == '}') return scn_fail(src, "'}' without sync {");
    if (s->nsteps == 0) return scn_fail(src, "empty program");
    return 0;
}

/* Parse one value of a key into `base + key->off`. */
static int scn_value(struct scenario *s, void *base, const struct scn_key *k, const char *v, const struct scn_src *src)
{
    void *field = (char *)base + k->off;
    const char *end = v;
    double x = 0;
    char *e;
    switch (k->type) {
    case K_STR: {
        size_t cap = k->off == SK(program_text) ? sizeof s->program_text : sizeof s->name;
        if (strlen(v) >= cap) return scn_fail(src, "%s: value longer than %zu characters", k->name, cap - 1);
        strcpy(field, v);
        return 0;
    }
    case K_PROGRAM:
        if (strlen(v) >= sizeof s->program_text) return scn_fail(src, "program longer than %zu characters", sizeof s->program_text - 1);
        strcpy(s->program_text, v);
        return scn_program(s, src, v);
    case K_DIST:
        if (scn_dist(src, v, &end, field) < 0) return -1;
        break;
    case K_TIME:
        if (scn_time(src, v, &end, &x) < 0) return -1;
        break;
    case K_BYTES:
        if (scn_number_unit(v, &end, byte_units, &x) < 0)
            return scn_fail(src, "%s: bad size '%s' (want e.g. 64KiB, 1MiB)", k->name, v);
        break;
    case K_U64:
        errno = 0;
        if (*v == '-') return scn_fail(src, "%s: '%s' is not a whole number >= 0", k->name, v);
        *(uint64_t *)field = strtoull(v, &e, 0);
        if (e == v || errno) return scn_fail(src, "%s: '%s' is not a whole number >= 0", k->name, v);
        end = e;
        break;
    default: /* K_INT, K_LONG, K_DOUBLE, K_BOOL */
        errno = 0;
        x = strtod(v, &e);
        if (e == v || errno || !isfinite(x)) return scn_fail(src, "%s: '%s' is not a number", k->name, v);
        if (k->type != K_DOUBLE && x != floor(x)) return scn_fail(src, "%s: '%s' is not a whole number", k->name, v);
        end = e;
        break;
    }
    if (*scn_skip_space(end)) return scn_fail(src, "%s: unexpected '%s' after the value", k->name, scn_skip_space(end));
    if (k->type == K_DIST) {
        const struct dist *d = field;
        x = d->kind == DIST_LOGNORMAL ? exp(d->a + Z99 * d->b) : d->kind == DIST_UNIFORM ? d->b : d->a;
    }
    if (k->type != K_U64 && k->type != K_STR && (x < k->min || x > k->max))
        return scn_fail(src, "%s: %s is out of range [%g, %g]%s", k->name, v, k->min, k->max,
                        k->type == K_TIME || k->type == K_DIST ? " ns" : "");
    switch (k->type) {
    case K_INT: case K_BOOL: *(int *)field = (int)x; break;
    case K_LONG: *(long *)field = (long)x; break;
    case K_DOUBLE: *(double *)field = x; break;
    case K_TIME: *(simtime *)field = (simtime)(x + 0.5); break;
    case K_BYTES: *(long *)field = (long)x; break;
    default: break;
    }
    return 0;
}

static void scn_service_defaults(struct service_cfg *c);

/* Set `key` to `value`: the one entry point for files, defaults and --set. */
static int scn_set(struct scenario *s, const char *key, const char *value, const struct scn_src *src)
{
    if (strncmp(key, "service.", 8) == 0) {
        const char *name = key + 8, *dot = strrchr(name, '.');
        if (!dot || dot == name) return scn_fail(src, "'%s': want service.NAME.KEY", key);
        int len = scn_ident(name);
        if (name + len != dot) return scn_fail(src, "'%s': bad service name", key);
        int i = scn_find_service(s, name, (size_t)len, 0);
        if (i < 0) {
            if ((i = scn_find_service(s, name, (size_t)len, 1)) < 0)
                return scn_fail(src, "too many services (at most %d)", MAX_SERVICES);
            memcpy(s->svc[i].name, name, (size_t)len);
        }
        for (size_t k = 0; k < SVC_NKEYS; k++)
            if (strcmp(dot + 1, svc_keys[k].name) == 0) return scn_value(s, &s->svc[i], &svc_keys[k], value, src);
        return scn_fail(src, "unknown service key '%s' (service keys: latency, limit, pool, connect_time, timeout)", dot + 1);
    }
    for (size_t k = 0; k < SCN_NKEYS; k++)
        if (strcmp(key, scn_keys[k].name) == 0) return scn_value(s, s, &scn_keys[k], value, src);
    return scn_fail(src, "unknown key '%s' (./sim --keys lists them)", key);
}

static void scn_service_defaults(struct service_cfg *c)
{
    char err[64];
    struct scn_src src = {"<defaults>", 0, err, sizeof err};
    for (size_t k = 0; k < SVC_NKEYS; k++) scn_value(NULL, c, &svc_keys[k], svc_keys[k].def, &src);
}

static void scn_defaults(struct scenario *s)
{
    char err[256];
    struct scn_src src = {"<defaults>", 0, err, sizeof err};
    memset(s, 0, sizeof *s);
    for (size_t k = 0; k < SCN_NKEYS; k++)
        if (scn_value(s, s, &scn_keys[k], scn_keys[k].def, &src) < 0) { fprintf(stderr, "sim: bug: %s\n", err); abort(); }
    for (int i = 0; i < MAX_SERVICES; i++) scn_service_defaults(&s->svc[i]);
}

/* Split "key = value" (or "key=value"), trimming blanks. Returns 0, or -1 if no '='. */
static int scn_split(char *line, char **key, char **value)
{
    char *eq = strchr(line, '=');
    if (!eq) return -1;
    *eq = 0;
    char *k = (char *)scn_skip_space(line), *v = (char *)scn_skip_space(eq + 1);
    for (char *t = eq - 1; t >= k && isspace((unsigned char)*t); t--) *t = 0;
    for (char *t = v + strlen(v) - 1; t >= v && isspace((unsigned char)*t); t--) *t = 0;
    *key = k, *value = v;
    return 0;
}

/* Read scenario text from `f` (named `name` in messages) over the defaults already in *s.
 * With `seen`, the keys it sets are appended there, comma-separated (calibration files). */
static int scn_read(struct scenario *s, FILE *f, const char *name, char *seen, size_t seenlen, char *err, size_t errlen)
{
    struct scn_src src = {name, 0, err, errlen};
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        src.line++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f))
            return scn_fail(&src, "line longer than %zu characters", sizeof line - 2);
        if (memchr(line, 0, len + 1) != line + len) return scn_fail(&src, "NUL byte in the line");
        char *hash = strchr(line, '#'), *key, *value;
        if (hash) *hash = 0;
        if (*scn_skip_space(line) == 0) continue;
        if (scn_split(line, &key, &value) < 0) return scn_fail(&src, "expected 'key = value'");
        if (scn_set(s, key, value, &src) < 0) return -1;
        if (seen && !strstr(seen, key)) {
            size_t used = strlen(seen);
            snprintf(seen + used, seenlen - used, "%s%s", used ? ", " : "", key);
        }
    }
    return 0;
}

static int scn_load_keys(struct scenario *s, const char *path, char *seen, size_t seenlen, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        struct scn_src src = {path, 0, err, errlen};
        return scn_fail(&src, "cannot open: %s", strerror(errno));
    }
    int rc = scn_read(s, f, path, seen, seenlen, err, errlen);
    fclose(f);
    return rc;
}

static int scn_load(struct scenario *s, const char *path, char *err, size_t errlen)
{
    return scn_load_keys(s, path, NULL, 0, err, errlen);
}

/* Cross-key checks and derived values, after every file and --set has been applied. */
static int scn_finish(struct scenario *s, const char *where, char *err, size_t errlen)
{
    struct scn_src src = {where, 0, err, errlen};
    if (s->warmup >= s->duration) return scn_fail(&src, "warmup must be shorter than duration");
    if (s->users == 0 && s->rate <= 0) return scn_fail(&src, "no load: set users > 0 (closed loop) or rate > 0 (open loop)");
    if (s->users > 0 && s->rate > 0) return scn_fail(&src, "set users (closed loop) or rate (open loop), not both");
    if (s->min_spare > s->max_threads) return scn_fail(&src, "platform.min_spare exceeds platform.max_threads");
    if (s->port_low > s->port_high) return scn_fail(&src, "net.port_low exceeds net.port_high");
    if (s->rate * (double)s->duration / SEC > 2e9) return scn_fail(&src, "rate x duration exceeds 2e9 requests");
    if (s->parallelism == 0) s->parallelism = s->cores;
    if (s->max_pool_size < s->parallelism) return scn_fail(&src, "virtual.max_pool_size is below virtual.parallelism");
    int depth = 0;
    for (int i = 0; i < s->nsteps; i++) depth += s->prog[i].op == OP_SYNC_BEGIN ? 1 : s->prog[i].op == OP_SYNC_END ? -1 : 0;
    if (depth) return scn_fail(&src, "program: unbalanced sync { }");
    return 0;
}

/* Print every key with its default and meaning: the one place keys are documented. */
static void scn_print_keys(FILE *out)
{
    fprintf(out, "Scenario keys (`key = value` in a .scn file, or --set key=value):\n\n");
    for (size_t k = 0; k < SCN_NKEYS; k++)
        fprintf(out, "  %-26s %-12s %s\n", scn_keys[k].name, scn_keys[k].def, scn_keys[k].doc);
    fprintf(out, "\nPer downstream service NAME (declared by using it):\n\n");
    for (size_t k = 0; k < SVC_NKEYS; k++)
        fprintf(out, "  service.NAME.%-13s %-12s %s\n", svc_keys[k].name, svc_keys[k].def, svc_keys[k].doc);
    fprintf(out, "\nValues: times 250ns 20us 50ms 1.5s; sizes 64KiB 1MiB; distributions 5ms, uniform(a,b),\n"
                 "exp(mean), lognormal(p50,p99). Program: cpu(DIST) call(NAME) par(A,B,..) io(DIST)\n"
                 "sync { ... } and item*COUNT, e.g. `program = cpu(100us) call(A)*3`.\n");
}

/* ==== Model storage: requests, calls, threads, FIFOs ==== */

static void *xrealloc(void *p, size_t n, size_t size)
{
    if (n && size > SIZE_MAX / n) { fprintf(stderr, "sim: allocation too large\n"); exit(1); }
    void *q = realloc(p, n * size > 0 ? n * size : 1);
    if (!q) { fprintf(stderr, "sim: out of memory (%zu bytes)\n", n * size); exit(1); }
    return q;
}

/* Take a slot from a growable array with a free list threaded through `next`. */
static int32_t slot_take(void **arr, int32_t *n, int32_t *cap, int32_t *freelist, size_t size)
{
    if (*freelist >= 0) {
        int32_t i = *freelist;
        *freelist = *(int32_t *)((char *)*arr + (size_t)i * size);
        return i;
    }
    if (*n == *cap) {
        if (*cap > INT32_MAX / 2) { fprintf(stderr, "sim: too many objects\n"); exit(1); }
        *cap = *cap ? *cap * 2 : 256;
        *arr = xrealloc(*arr, (size_t)*cap, size);
    }
    return (*n)++;
}

static void slot_give(void *arr, int32_t *freelist, size_t size, int32_t i)
{
    *(int32_t *)((char *)arr + (size_t)i * size) = *freelist;
    *freelist = i;
}

/* Intrusive FIFOs over arrays whose elements start with `int32_t next`. */
#define FIFO_EMPTY ((struct fifo){-1, -1, 0})
static int32_t *fifo_link(void *base, size_t size, int32_t i) { return (int32_t *)((char *)base + (size_t)i * size); }

static void fifo_push(struct fifo *q, void *base, size_t size, int32_t i)
{
    *fifo_link(base, size, i) = -1;
    if (q->tail >= 0) *fifo_link(base, size, q->tail) = i;
    else q->head = i;
    q->tail = i;
    q->len++;
}

static int32_t fifo_pop(struct fifo *q, void *base, size_t size)
{
    int32_t i = q->head;
    if (i < 0) return -1;
    q->head = *fifo_link(base, size, i);
    if (q->head < 0) q->tail = -1;
    q->len--;
    return i;
}
#define FIFO_PUSH(q, arr, i) fifo_push((q), (arr), sizeof *(arr), (i))
#define FIFO_POP(q, arr) fifo_pop((q), (arr), sizeof *(arr))

static int32_t req_alloc(struct model *m)
{
    return slot_take((void **)&m->req, &m->nreq, &m->capreq, &m->free_req, sizeof *m->req);
}

static int32_t call_alloc(struct model *m)
{
    return slot_take((void **)&m->call, &m->ncall, &m->capcall, &m->free_call, sizeof *m->call);
}

/* ==== Chrome trace (declared here, written in Reports) ==== */

static void trace_span(struct model *m, int32_t t, int state, simtime from, simtime to);

/* ==== Threads ==== */

static void thr_set(struct model *m, int32_t t, int state)
{
    struct thr *th = &m->thr[t];
    if (m->trace && th->state != THR_IDLE && m->now > th->since) trace_span(m, t, th->state, th->since, m->now);
    m->thr_state_n[th->state]--;
    m->thr_state_n[state]++;
    th->state = (uint8_t)state;
    th->since = m->now;
}

/* A new OS thread, idle and off-core. Its creation cost is charged by the caller. */
static int32_t thr_spawn(struct model *m, int extra)
{
    int32_t t = slot_take((void **)&m->thr, &m->nthr, &m->capthr, &m->free_thr, sizeof *m->thr);
    m->thr[t] = (struct thr){.next = -1, .req = -1, .core = -1, .state = THR_IDLE, .alive = 1,
                             .extra = (uint8_t)extra, .id = (uint32_t)m->next_thread_id++, .since = m->now};
    m->thr_state_n[THR_IDLE]++;
    m->threads_alive++;
    m->st.thread_creations++;
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

/* Remove a given thread from the idle FIFO (idle timeouts retire threads from the middle). */
static void thr_unidle(struct model *m, int32_t t)
{
    struct fifo rest = FIFO_EMPTY;
    for (int32_t i; (i = FIFO_POP(&m->idle, m->thr)) >= 0;)
        if (i != t) FIFO_PUSH(&rest, m->thr, i);
    m->idle = rest;
}

/* ==== Downstream services ==== */

/* Ephemeral ports. Each closed connection's port sits in TIME_WAIT until its expiry; the
 * ring keeps expiries oldest first (all TIME_WAITs last equally long, so closing order is
 * expiry order), and expired ones are dropped lazily. */
static void svc_expire(struct model *m, struct svc_state *v)
{
    while (v->tw_len && v->tw[v->tw_head] <= m->now) {
        v->tw_head = (v->tw_head + 1) % v->tw_cap;
        v->tw_len--;
        m->ports_tw--;
    }
}

static int svc_port_take(struct model *m, struct svc_state *v)
{
    const struct scenario *s = m->s;
    int range = s->port_high - s->port_low + 1;
    svc_expire(m, v);
    if (v->ports_open + v->tw_len < range) { v->ports_open++; return 0; }
    /* tcp_tw_reuse: a TIME_WAIT port whose close is at least 1 s old may serve again */
    if (s->tw_reuse && v->tw_len && v->tw[v->tw_head] - s->time_wait + SEC <= m->now) {
        v->tw_head = (v->tw_head + 1) % v->tw_cap;
        v->tw_len--;
        m->ports_tw--;
        v->ports_open++;
        return 0;
    }
    return -1;
}

static void svc_port_close(struct model *m, struct svc_state *v)
{
    v->ports_open--;
    if (m->s->time_wait == 0) return;
    svc_expire(m, v);
    if (v->tw_len == v->tw_cap) { /* cannot happen: ports_open + tw_len <= range = tw_cap */
        fprintf(stderr, "sim: bug: TIME_WAIT ring full\n");
        abort();
    }
    v->tw[(v->tw_head + v->tw_len) % v->tw_cap] = m->now + m->s->time_wait;
    v->tw_len++;
    m->ports_tw++;
}


static void req_wake_one(struct model *m, int32_t r); /* see Requests */

/* The call has a connection: now it needs a slot at the service, then it takes its latency. */
static void svc_start(struct model *m, int32_t c)
{
    struct call *k = &m->call[c];
    const struct service_cfg *cfg = &m->s->svc[k->svc];
    simtime lat = k->latency + (k->new_conn ? cfg->connect_time : 0);
    if (cfg->timeout && lat > cfg->timeout) lat = cfg->timeout, k->timed_out = 1;
    m->svc[k->svc].in_service++;
    evq_push(&m->q, m->now + lat, EV_IO_DONE, (uint32_t)c, 0);
}

static void svc_connected(struct model *m, int32_t c)
{
    struct call *k = &m->call[c];
    struct svc_state *v = &m->svc[k->svc];
    int limit = m->s->svc[k->svc].limit;
    if (limit && v->in_service >= limit) FIFO_PUSH(&v->wait_slot, m->call, c);
    else svc_start(m, c);
}

/* Begin a downstream call for request r. Returns -1 (and frees the call) if no ephemeral
 * port is left: connect() fails with EADDRNOTAVAIL and the request fails. */
static int svc_call(struct model *m, int32_t r, int svc, simtime latency)
{
    const struct service_cfg *cfg = &m->s->svc[svc];
    struct svc_state *v = &m->svc[svc];
    int32_t c = call_alloc(m);
    m->call[c] = (struct call){.next = -1, .req = r, .svc = (uint8_t)svc, .latency = latency};
    v->calls++;
    v->inflight++;
    if (cfg->pool > 0) { /* keep-alive pool: reuse, grow up to the pool size, or wait */
        if (v->conns_busy < v->conns_open) { v->conns_busy++; svc_connected(m, c); return 0; }
        if (v->conns_open >= cfg->pool) { FIFO_PUSH(&v->wait_conn, m->call, c); return 0; }
    }
    if (svc_port_take(m, v) < 0) {
        v->inflight--;
        slot_give(m->call, &m->free_call, sizeof *m->call, c);
        return -1;
    }
    v->opened++;
    m->call[c].new_conn = 1;
    if (cfg->pool > 0) v->conns_open++, v->conns_busy++;
    svc_connected(m, c);
    return 0;
}

/* EV_IO_DONE: the service answered (or the call timed out). Free the slot and the
 * connection, hand them to the next waiter, and tell the request. */
static void svc_done(struct model *m, const struct event *e)
{
    int32_t c = (int32_t)e->a, next;
    struct call *k = &m->call[c];
    struct svc_state *v = &m->svc[k->svc];
    int32_t r = k->req;
    v->in_service--;
    v->inflight--;
    if ((next = FIFO_POP(&v->wait_slot, m->call)) >= 0) svc_start(m, next);
    if (m->s->svc[k->svc].pool > 0) {
        if ((next = FIFO_POP(&v->wait_conn, m->call)) >= 0) svc_connected(m, next); /* hand over */
        else v->conns_busy--;
    } else {
        svc_port_close(m, v); /* the client closes first, so the client's port enters TIME_WAIT */
    }
    if (k->timed_out && m->req[r].fail == FAIL_NONE) m->req[r].fail = FAIL_TIMEOUT;
    slot_give(m->call, &m->free_call, sizeof *m->call, c);
    req_wake_one(m, r);
}

/* ==== OS scheduler ==== */

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
    if (sw) m->st.ctx_switches++;
    k->thr = t, k->last = t, k->run = sw + run, k->cpu = run;
    th->core = c;
    thr_set(m, t, THR_RUNNING);
    evq_push(&m->q, m->now + sw + run, EV_BURST_END, (uint32_t)c, 0);
}

/* Thread t wants `ns` (> 0) of CPU. A free core it ran on last is preferred (no switch). */
static void cpu_want(struct model *m, int32_t t, simtime ns)
{
    int free = -1;
    m->thr[t].burst_left = ns;
    for (int c = 0; c < m->s->cores; c++)
        if (m->core[c].thr < 0) {
            if (m->core[c].last == t) { free = c; break; }
            if (free < 0) free = c;
        }
    if (free >= 0) { cpu_dispatch(m, free, t); return; }
    thr_set(m, t, THR_READY);
    FIFO_PUSH(&m->ready, m->thr, t);
}

static void req_continue(struct model *m, int32_t r); /* see Requests */

/* EV_BURST_END: a slice ended on core c. */
static void cpu_burst_end(struct model *m, const struct event *e)
{
    int c = (int)e->a;
    struct core *k = &m->core[c];
    int32_t t = k->thr, next;
    struct thr *th = &m->thr[t];
    m->st.busy_ns += k->run;
    th->burst_left -= k->cpu;
    if (th->burst_left > 0) {
        if (m->ready.len == 0) { cpu_dispatch(m, c, t); return; } /* nobody waits: go on */
        th->core = -1, k->thr = -1; /* preempted: to the back of the queue */
        thr_set(m, t, THR_READY);
        FIFO_PUSH(&m->ready, m->thr, t);
        cpu_dispatch(m, c, FIFO_POP(&m->ready, m->thr));
        return;
    }
    th->core = -1, k->thr = -1;
    req_continue(m, th->req); /* may want the CPU again at once, and get this core back */
    if (k->thr < 0 && (next = FIFO_POP(&m->ready, m->thr)) >= 0) cpu_dispatch(m, c, next);
}

/* ==== Requests ==== */

/* The interpreter both models share. It runs request r as far as it can without waiting:
 * sync markers are instant; CPU work (a step, or overhead owed as `debt`) goes to the
 * request's thread via cpu_want; I/O goes to the services and the model blocks the request.
 * It is called again when the burst ends or the I/O completes, and picks up at `phase`. */

static void req_finish(struct model *m, int32_t r);

static void req_issue(struct model *m, int32_t r, const struct step *st)
{
    struct req *q = &m->req[r];
    q->phase = PH_WAIT;
    if (st->op == OP_IO) {
        q->pending = 1;
        evq_push(&m->q, m->now + dist_sample(&st->d, &q->rng), EV_IO_STEP_DONE, (uint32_t)r, 0);
        m->ops->block(m, r, OP_IO);
        return;
    }
    simtime lat[MAX_PAR];
    for (int i = 0; i < st->nsvc; i++) /* sample first, in program order: common random numbers */
        lat[i] = dist_sample(&m->s->svc[st->svc[i]].latency, &q->rng);
    q->pending = st->nsvc;
    for (int i = 0; i < st->nsvc; i++)
        if (svc_call(m, r, st->svc[i], lat[i]) < 0) {
            q = &m->req[r];
            q->pending--;
            q->fail = FAIL_NO_PORT;
        }
    q = &m->req[r];
    if (q->pending) m->ops->block(m, r, st->op);
}

static void req_continue(struct model *m, int32_t r)
{
    const struct scenario *s = m->s;
    for (;;) {
        struct req *q = &m->req[r];
        if (q->fail != FAIL_NONE) { req_finish(m, r); return; }
        const struct step *st = q->pc < s->nsteps ? &s->prog[q->pc] : NULL;
        switch (q->phase) {
        case PH_CPU: case PH_WAIT: /* the step is over */
            q->phase = PH_START, q->pc++;
            continue;
        case PH_PREBLOCK: /* the model's overhead is paid: start the I/O */
            req_issue(m, r, st);
            if (m->req[r].pending) return;
            continue;
        }
        /* PH_START: pay overhead owed (creation, unpark) first; a CPU step absorbs it */
        if (q->debt > 0 && (!st || st->op != OP_CPU)) {
            simtime d = q->debt;
            q->debt = 0;
            cpu_want(m, q->thr, d);
            return;
        }
        if (!st) { req_finish(m, r); return; }
        switch (st->op) {
        case OP_SYNC_BEGIN: q->sync_depth++, q->pc++; continue;
        case OP_SYNC_END: q->sync_depth--, q->pc++; continue;
        case OP_CPU: {
            simtime d = dist_sample(&st->d, &q->rng) + q->debt;
            q->debt = 0, q->phase = PH_CPU;
            if (d > 0) { cpu_want(m, q->thr, d); return; }
            continue;
        }
        default: { /* a blocking step: the model may charge CPU first (parking) */
            simtime d = m->ops->block_cost(m, r, st->op) + st->nsvc * m->s->cpu_per_call[m->kind];
            q->phase = PH_PREBLOCK;
            if (d > 0) { cpu_want(m, q->thr, d); return; }
            continue;
        }
        }
    }
}

/* Continue r once the current event is handled. Handing a thread to the next request from
 * inside another request's end would otherwise recurse once per queued request. */
static void model_defer(struct model *m, int32_t r) { FIFO_PUSH(&m->todo, m->req, r); }

/* One of r's calls (or its io step) completed. */
static void req_wake_one(struct model *m, int32_t r)
{
    if (--m->req[r].pending == 0) m->ops->wake(m, r);
}

static void model_io_step_done(struct model *m, const struct event *e) { req_wake_one(m, (int32_t)e->a); }

static void wl_next(struct model *m, int32_t r); /* see Workload */
static void conn_admit(struct model *m, int32_t r);

/* r leaves the server, answered or failed: count it, free its thread and connection, and
 * let its user think about the next one. */
static void req_finish(struct model *m, int32_t r)
{
    struct req *q = &m->req[r];
    struct stats *st = &m->st;
    m->in_flight--;
    if (q->fail != FAIL_NONE) {
        st->failed[q->fail]++;
    } else {
        st->completed++;
        if (m->now >= m->s->warmup) {
            uint64_t lat = (uint64_t)(m->now - q->arrived);
            st->completed_window++;
            hist_add(&st->lat, lat);
            st->lat_sum += (double)lat;
            hist_add(&st->lat_interval, lat);
        }
        st->interval_done++;
    }
    if (q->thr >= 0) m->ops->release(m, r);
    if (m->req[r].admitted) {
        int32_t next;
        m->conns--;
        if ((next = FIFO_POP(&m->backlog, m->req)) >= 0) conn_admit(m, next);
    }
    wl_next(m, r);
    slot_give(m->req, &m->free_req, sizeof *m->req, r);
}

/* The connector: maxConnections held at once, then the kernel's listen backlog of
 * acceptCount, then refusal. Tomcat keeps these limits with virtual threads too. */
static void conn_admit(struct model *m, int32_t r)
{
    m->conns++;
    m->req[r].admitted = 1;
    m->req[r].debt += m->s->cpu_per_request[m->kind];
    m->ops->admit(m, r);
}

static void conn_arrive(struct model *m, int32_t r)
{
    if (m->conns < m->s->max_connections) conn_admit(m, r);
    else if (m->backlog.len < m->s->accept_count) FIFO_PUSH(&m->backlog, m->req, r);
    else { m->req[r].fail = FAIL_REFUSED; req_finish(m, r); }
}

/* ==== Platform model ==== */

/* Tomcat's executor (a ThreadPoolExecutor): an idle thread takes the request; if none is
 * idle the pool grows, one thread per request, up to maxThreads; beyond that requests wait
 * in the executor's queue. The thread then holds the request, blocked or not, to its end. */

static int32_t plat_pool_size(const struct model *m) { return m->threads_alive; }

static void plat_assign(struct model *m, int32_t t, int32_t r)
{
    m->thr[t].req = r;
    m->thr[t].idle_gen++;
    m->req[r].thr = t;
    model_defer(m, r);
}

static void plat_admit(struct model *m, int32_t r)
{
    const struct scenario *s = m->s;
    int32_t t = FIFO_POP(&m->idle, m->thr);
    if (t >= 0) { plat_assign(m, t, r); return; }
    if (plat_pool_size(m) < s->max_threads) {
        t = thr_spawn(m, 0);
        m->req[r].debt += s->thread_create;
        plat_assign(m, t, r);
        return;
    }
    if (s->max_queue && m->queue.len >= s->max_queue) {
        m->req[r].fail = FAIL_REJECTED; /* 503 */
        model_defer(m, r);
        return;
    }
    FIFO_PUSH(&m->queue, m->req, r);
}

static simtime plat_block_cost(struct model *m, int32_t r, int op) { (void)m, (void)r, (void)op; return 0; }

/* A blocking socket read: the OS thread sleeps in the kernel, holding its stack. */
static void plat_block(struct model *m, int32_t r, int op) { (void)op; thr_set(m, m->req[r].thr, THR_BLOCKED); }

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
        evq_push(&m->q, m->now + m->s->idle_timeout, EV_IDLE_CHECK, (uint32_t)t, m->thr[t].idle_gen);
}

static void plat_release(struct model *m, int32_t r)
{
    int32_t t = m->req[r].thr, next;
    m->thr[t].req = -1;
    m->req[r].thr = -1;
    if ((next = FIFO_POP(&m->queue, m->req)) >= 0) plat_assign(m, t, next);
    else plat_idle(m, t);
}

static const struct model_ops plat_ops = {plat_admit, plat_block_cost, plat_block, plat_wake, plat_release};

/* ==== Virtual model ==== */

/* Loom: every request gets a new virtual thread, queued FIFO for `parallelism` carriers
 * (the ForkJoinPool in async mode). A blocking socket call unmounts it: the continuation
 * yields, its frames are kept on the heap, and the carrier runs the next one. When the
 * poller sees the socket ready, the thread is unparked and queued again. Inside
 * `synchronized` it cannot unmount (JDK 21): it pins the carrier, which blocks with it. */

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
    int32_t r = FIFO_POP(&m->queue, m->req);
    if (r >= 0) { vt_mount(m, c, r); return; }
    thr_set(m, c, THR_IDLE);
    FIFO_PUSH(&m->idle, m->thr, c);
    if (m->thr[c].extra)
        evq_push(&m->q, m->now + m->s->carrier_keepalive, EV_IDLE_CHECK, (uint32_t)c, m->thr[c].idle_gen);
}

static void vt_kick(struct model *m)
{
    int32_t c;
    while (m->queue.len && (c = FIFO_POP(&m->idle, m->thr)) >= 0) vt_mount(m, c, FIFO_POP(&m->queue, m->req));
}

static void vt_admit(struct model *m, int32_t r)
{
    m->vt_alive++;
    m->req[r].debt += m->s->vt_create;
    FIFO_PUSH(&m->queue, m->req, r);
    vt_kick(m);
}

/* Does blocking in this step pin the carrier? Socket I/O inside synchronized does (JDK 21-23). */
static int vt_pins(const struct model *m, int32_t r, int op)
{
    return op != OP_IO && m->req[r].sync_depth > 0 && !m->s->jep491;
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
    m->carriers_compensating++;
    if (m->threads_alive - m->carriers_compensating < s->parallelism && m->threads_alive < s->max_pool_size) {
        int32_t c = thr_spawn(m, 1);
        m->st.busy_ns += s->thread_create; /* charged, not scheduled: it is short and rare */
        vt_carrier_free(m, c);
    }
}

static void vt_block(struct model *m, int32_t r, int op)
{
    struct req *q = &m->req[r];
    int32_t c = q->thr;
    if (op == OP_IO || vt_pins(m, r, op)) { /* the carrier blocks with the virtual thread mounted */
        q->pinned = 1;
        thr_set(m, c, THR_BLOCKED);
        if (op == OP_IO) vt_compensate(m);
        else m->vt_pinned++;
        return;
    }
    q->parked = 1, q->thr = -1;
    m->vt_parked++;
    m->st.parks++;
    m->thr[c].req = -1;
    m->carriers_busy--;
    vt_carrier_free(m, c);
}

static void vt_wake(struct model *m, int32_t r)
{
    struct req *q = &m->req[r];
    if (q->parked) { /* unpark: queue it for a carrier again */
        q->parked = 0;
        m->vt_parked--;
        q->debt += m->s->vt_unpark;
        FIFO_PUSH(&m->queue, m->req, r);
        vt_kick(m);
        return;
    }
    q->pinned = 0;
    if (m->s->prog[q->pc].op == OP_IO) m->carriers_compensating--;
    else m->vt_pinned--;
    req_continue(m, r);
}

static void vt_release(struct model *m, int32_t r)
{
    int32_t c = m->req[r].thr;
    m->thr[c].req = -1;
    m->req[r].thr = -1;
    m->carriers_busy--;
    m->vt_alive--;
    vt_carrier_free(m, c);
}

static const struct model_ops vt_ops = {vt_admit, vt_block_cost, vt_block, vt_wake, vt_release};

/* EV_IDLE_CHECK: a thread idle since generation b may retire (pool shrink, carrier keepalive). */
static void model_idle_check(struct model *m, const struct event *e)
{
    int32_t t = (int32_t)e->a;
    struct thr *th = &m->thr[t];
    if (!th->alive || th->state != THR_IDLE || th->idle_gen != e->b || th->req >= 0) return;
    if (m->kind == MODEL_PLATFORM ? plat_pool_size(m) <= m->s->min_spare : !th->extra) return;
    if (m->kind == MODEL_VIRTUAL && m->threads_alive <= m->s->parallelism) return;
    thr_unidle(m, t);
    thr_exit(m, t);
}

/* ==== Workload ==== */

/* Closed loop: N users, each sending a request, waiting for the answer, thinking, and
 * sending the next. Open loop: Poisson arrivals at `rate`, whatever the server does. A
 * request's random stream is keyed by (user, iteration) or by its arrival index, so both
 * models draw the same service times for the same request. */

static void wl_start(struct model *m)
{
    const struct scenario *s = m->s;
    if (s->users > 0) {
        m->user_iter = xrealloc(NULL, (size_t)s->users, sizeof *m->user_iter);
        memset(m->user_iter, 0, (size_t)s->users * sizeof *m->user_iter);
        for (long u = 0; u < s->users; u++)
            evq_push(&m->q, (simtime)((double)s->rampup * (double)u / (double)s->users), EV_ARRIVE, (uint32_t)u, 0);
    } else {
        rng_xoshiro_seed(m->arrival_rng, rng_key(s->seed, UINT64_MAX, 0));
        evq_push(&m->q, (simtime)(-log(rng_unit(rng_xoshiro(m->arrival_rng))) / s->rate * SEC), EV_ARRIVE, 0, 0);
    }
}

static void wl_arrive(struct model *m, const struct event *e)
{
    const struct scenario *s = m->s;
    uint64_t key;
    int32_t user = -1;
    if (m->now >= s->duration) return;
    if (s->users > 0) {
        user = (int32_t)e->a;
        key = rng_key(s->seed, (uint64_t)user, m->user_iter[user]++);
    } else {
        key = rng_key(s->seed, (uint64_t)1 << 40, m->arrival_index++);
        simtime gap = (simtime)(-log(rng_unit(rng_xoshiro(m->arrival_rng))) / s->rate * SEC);
        evq_push(&m->q, m->now + gap, EV_ARRIVE, 0, 0);
    }
    int32_t r = req_alloc(m);
    m->req[r] = (struct req){.next = -1, .thr = -1, .user = user, .fail = FAIL_NONE, .rng = key,
                             .arrived = m->now, .id = ++m->next_req_id};
    m->st.arrived++;
    m->in_flight++;
    conn_arrive(m, r);
}

/* After r ends, its user thinks (and, after a failure, backs off) before the next one. */
static void wl_next(struct model *m, int32_t r)
{
    const struct scenario *s = m->s;
    const struct req *q = &m->req[r];
    if (q->user < 0) return;
    uint64_t think_rng = rng_key(s->seed ^ 0x7468696e6bull, (uint64_t)q->user, m->user_iter[q->user] - 1);
    simtime delay = dist_sample(&s->think, &think_rng) + (q->fail != FAIL_NONE ? s->retry_after : 0);
    evq_push(&m->q, m->now + delay, EV_ARRIVE, (uint32_t)q->user, 0);
}

/* ==== Engine ==== */

static int64_t model_thread_mem(const struct model *m)
{
    const struct scenario *s = m->s;
    return (int64_t)(s->runtime_threads + m->threads_alive) * s->thread_stack_rss + (int64_t)m->vt_alive * s->vt_stack_bytes;
}

#define PEAK(field, value) do { if ((value) > st->field) st->field = (value); } while (0)
static void model_peaks(struct model *m)
{
    struct stats *st = &m->st;
    int64_t reserved = (int64_t)(m->s->runtime_threads + m->threads_alive) * m->s->thread_stack_reserved;
    PEAK(peak_os_threads, m->s->runtime_threads + m->threads_alive);
    PEAK(peak_carriers_busy, m->carriers_busy);
    PEAK(peak_vt_parked, m->vt_parked);
    PEAK(peak_vt_pinned, m->vt_pinned);
    PEAK(peak_queued, m->queue.len);
    PEAK(peak_blocked, m->thr_state_n[THR_BLOCKED]);
    PEAK(peak_in_flight, m->in_flight);
    int64_t thread_mem = model_thread_mem(m);
    PEAK(peak_thread_mem, thread_mem);
    PEAK(peak_rss, m->s->mem_base + thread_mem + (int64_t)m->in_flight * m->s->mem_per_request);
    PEAK(peak_thread_reserved, reserved);
    PEAK(peak_ports_tw, m->ports_tw);
}

/* EV_SAMPLE: one row of the time series. */
static void model_sample(struct model *m, const struct event *e)
{
    (void)e;
    const struct scenario *s = m->s;
    struct stats *st = &m->st;
    struct sample x = {0};
    double secs = (double)s->sample_interval / SEC;
    for (int i = 0; i < s->nsvc; i++) {
        svc_expire(m, &m->svc[i]);
        x.ports_open += m->svc[i].ports_open;
        x.conns_busy += m->svc[i].conns_busy;
    }
    x.t = m->now;
    x.rps = (double)st->interval_done / secs;
    x.p99_ms = hist_quantile(&st->lat_interval, 0.99) / 1e6;
    x.cpu_util = (double)(st->busy_ns - st->busy_at_sample) / ((double)s->cores * (double)s->sample_interval);
    if (x.cpu_util > 1) x.cpu_util = 1;
    x.os_threads = s->runtime_threads + m->threads_alive;
    x.blocked = m->thr_state_n[THR_BLOCKED];
    x.carriers_busy = m->carriers_busy;
    x.vt_runnable = m->kind == MODEL_VIRTUAL ? m->queue.len : 0;
    x.vt_parked = m->vt_parked;
    x.vt_pinned = m->vt_pinned;
    x.queued = m->queue.len + m->backlog.len;
    x.in_flight = m->in_flight;
    x.ports_tw = m->ports_tw;
    x.thread_mem = model_thread_mem(m);
    for (int k = 0; k < FAIL_N; k++) x.failed += st->failed[k];
    st->interval_done = 0;
    st->busy_at_sample = st->busy_ns;
    memset(&st->lat_interval, 0, sizeof st->lat_interval);
    if (m->nseries == m->capseries) {
        m->capseries = m->capseries ? m->capseries * 2 : 256;
        m->series = xrealloc(m->series, (size_t)m->capseries, sizeof *m->series);
    }
    m->series[m->nseries++] = x;
    if (m->now + s->sample_interval <= s->duration) evq_push(&m->q, m->now + s->sample_interval, EV_SAMPLE, 0, 0);
}

typedef void (*ev_handler)(struct model *, const struct event *);
static const ev_handler ev_handlers[] = {
    [EV_ARRIVE] = wl_arrive,
    [EV_BURST_END] = cpu_burst_end,
    [EV_IO_DONE] = svc_done,
    [EV_IO_STEP_DONE] = model_io_step_done,
    [EV_IDLE_CHECK] = model_idle_check,
    [EV_SAMPLE] = model_sample,
};

static void model_init(struct model *m, const struct scenario *s, int kind)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->s = s;
    m->ops = kind == MODEL_PLATFORM ? &plat_ops : &vt_ops;
    m->free_req = m->free_call = m->free_thr = -1;
    m->ready = m->idle = m->backlog = m->queue = m->todo = FIFO_EMPTY;
    m->core = xrealloc(NULL, (size_t)s->cores, sizeof *m->core);
    for (int c = 0; c < s->cores; c++) m->core[c] = (struct core){-1, -1, 0, 0};
    for (int i = 0; i < s->nsvc; i++) {
        m->svc[i].wait_slot = m->svc[i].wait_conn = FIFO_EMPTY;
        m->svc[i].tw_cap = s->port_high - s->port_low + 1;
        m->svc[i].tw = xrealloc(NULL, (size_t)m->svc[i].tw_cap, sizeof *m->svc[i].tw);
    }
    /* platform: minSpareThreads exist from the start; virtual: `parallelism` carriers */
    int start = kind == MODEL_PLATFORM ? s->min_spare : s->parallelism;
    for (int i = 0; i < start; i++) {
        int32_t t = thr_spawn(m, 0); /* may move m->thr: take the index before pushing */
        FIFO_PUSH(&m->idle, m->thr, t);
    }
    m->st.thread_creations = 0;
    wl_start(m);
    evq_push(&m->q, s->sample_interval, EV_SAMPLE, 0, 0);
    model_peaks(m);
}

static void model_free(struct model *m)
{
    free(m->q.heap), free(m->req), free(m->call), free(m->thr), free(m->core);
    free(m->user_iter), free(m->series);
    for (int i = 0; i < MAX_SERVICES; i++) free(m->svc[i].tw);
    memset(m, 0, sizeof *m);
}

/* Handle one event if there is one at or before `until` (and the scenario's end).
 * Returns its type, or -1 when there is none. */
static int model_step(struct model *m, simtime until)
{
    if (until > m->s->duration) until = m->s->duration;
    if (m->stuck) return -1;
    if (m->q.len == 0 || m->q.heap[0].t > until) {
        if (until > m->now) m->now = until;
        return -1;
    }
    struct event e = evq_pop(&m->q);
    if (e.t != m->last_t) m->last_t = e.t, m->same_t_events = 0;
    else if (++m->same_t_events > 1000000ull + 10ull * (uint64_t)m->s->users) {
        m->stuck = 1; /* a zero-time loop: far more events at one instant than users could cause */
        return -1;
    }
    m->now = e.t;
    int type = ev_type_of(&e);
    ev_handlers[type](m, &e);
    for (int32_t r; (r = FIFO_POP(&m->todo, m->req)) >= 0;) req_continue(m, r);
    model_peaks(m);
    m->st.events++;
    return type;
}

static void model_run(struct model *m, simtime until)
{
    while (model_step(m, until) >= 0) {}
}

/* ==== Reports ==== */

/* What a report says of one model. Latencies in ms, memory in bytes. */
struct result {
    double throughput_rps, mean, p50, p90, p99, p999, max, cpu_util;
    double arrived, completed, failed, in_flight;
    double peak_os_threads, peak_blocked, peak_carriers_busy, peak_vt_parked, peak_vt_pinned;
    double peak_queued, peak_ports_tw, peak_thread_mem, peak_thread_reserved, peak_rss;
    double ctx_switches, thread_creations, parks, conns_opened, events;
    double failed_kind[FAIL_N];
};

static void rep_result(const struct model *m, struct result *r)
{
    const struct stats *st = &m->st;
    const struct scenario *s = m->s;
    memset(r, 0, sizeof *r);
    r->throughput_rps = (double)st->completed_window / ((double)(s->duration - s->warmup) / SEC);
    r->mean = st->completed_window ? st->lat_sum / (double)st->completed_window / 1e6 : 0;
    r->p50 = hist_quantile(&st->lat, 0.50) / 1e6;
    r->p90 = hist_quantile(&st->lat, 0.90) / 1e6;
    r->p99 = hist_quantile(&st->lat, 0.99) / 1e6;
    r->p999 = hist_quantile(&st->lat, 0.999) / 1e6;
    r->max = (double)st->lat.max / 1e6;
    r->cpu_util = (double)st->busy_ns / ((double)s->cores * (double)s->duration);
    r->arrived = (double)st->arrived;
    r->completed = (double)st->completed;
    for (int k = 0; k < FAIL_N; k++) r->failed += (double)st->failed[k], r->failed_kind[k] = (double)st->failed[k];
    r->in_flight = m->in_flight;
    r->peak_os_threads = st->peak_os_threads;
    r->peak_blocked = st->peak_blocked;
    r->peak_carriers_busy = st->peak_carriers_busy;
    r->peak_vt_parked = st->peak_vt_parked;
    r->peak_vt_pinned = st->peak_vt_pinned;
    r->peak_queued = st->peak_queued;
    r->peak_ports_tw = st->peak_ports_tw;
    r->peak_thread_mem = (double)st->peak_thread_mem;
    r->peak_thread_reserved = (double)st->peak_thread_reserved;
    r->peak_rss = (double)st->peak_rss;
    r->ctx_switches = (double)st->ctx_switches;
    r->thread_creations = (double)st->thread_creations;
    r->parks = (double)st->parks;
    r->events = (double)st->events;
    for (int i = 0; i < s->nsvc; i++) r->conns_opened += (double)m->svc[i].opened;
}

/* One row per figure: the text table, JSON and CSV are all generated from this table. */
enum rep_fmt { R_INT, R_RATE, R_MS, R_MIB, R_PCT };
struct rep_row {
    const char *label; /* text report */
    const char *key;   /* JSON / CSV name; a '.' puts it in a sub-object (latency_ms.p50) */
    size_t off;
    uint8_t fmt;
};
#define RR(field) offsetof(struct result, field)
static const struct rep_row rep_rows[] = {
    {"throughput (req/s)", "throughput_rps", RR(throughput_rps), R_RATE},
    {"latency mean (ms)", "latency_ms.mean", RR(mean), R_MS},
    {"latency p50 (ms)", "latency_ms.p50", RR(p50), R_MS},
    {"latency p90 (ms)", "latency_ms.p90", RR(p90), R_MS},
    {"latency p99 (ms)", "latency_ms.p99", RR(p99), R_MS},
    {"latency p99.9 (ms)", "latency_ms.p999", RR(p999), R_MS},
    {"latency max (ms)", "latency_ms.max", RR(max), R_MS},
    {"requests arrived", "arrived", RR(arrived), R_INT},
    {"requests completed", "completed", RR(completed), R_INT},
    {"requests failed", "failed", RR(failed), R_INT},
    {"requests in flight at end", "in_flight", RR(in_flight), R_INT},
    {"peak OS threads", "peak_os_threads", RR(peak_os_threads), R_INT},
    {"peak OS threads blocked", "peak_threads_blocked", RR(peak_blocked), R_INT},
    {"peak carriers busy", "peak_carriers_busy", RR(peak_carriers_busy), R_INT},
    {"peak virtual threads parked", "peak_vthreads_parked", RR(peak_vt_parked), R_INT},
    {"peak virtual threads pinned", "peak_vthreads_pinned", RR(peak_vt_pinned), R_INT},
    {"peak requests queued", "peak_queued", RR(peak_queued), R_INT},
    {"peak ports in TIME_WAIT", "peak_ports_time_wait", RR(peak_ports_tw), R_INT},
    {"peak thread memory (MiB)", "peak_thread_memory_bytes", RR(peak_thread_mem), R_MIB},
    {"peak stack reserved (MiB)", "peak_thread_reserved_bytes", RR(peak_thread_reserved), R_MIB},
    {"peak RSS, predicted (MiB)", "predicted_rss_bytes", RR(peak_rss), R_MIB},
    {"CPU utilisation (%)", "cpu_utilisation", RR(cpu_util), R_PCT},
    {"context switches", "ctx_switches", RR(ctx_switches), R_INT},
    {"OS threads created", "thread_creations", RR(thread_creations), R_INT},
    {"virtual thread parks", "parks", RR(parks), R_INT},
    {"TCP connections opened", "connections_opened", RR(conns_opened), R_INT},
    {"events simulated", "events", RR(events), R_INT},
};
#define REP_NROWS (sizeof rep_rows / sizeof rep_rows[0])

static double rep_get(const struct result *r, const struct rep_row *row) { return *(const double *)((const char *)r + row->off); }

/* A number for people: thousands separated, fixed decimals per format. */
static void rep_human(char *buf, size_t len, double v, int fmt)
{
    if (fmt == R_MIB) v /= 1048576.0;
    if (fmt == R_PCT) v *= 100;
    int decimals = fmt == R_INT ? 0 : fmt == R_MS ? 2 : 1;
    char raw[64];
    snprintf(raw, sizeof raw, "%.*f", decimals, v);
    char *dot = strchr(raw, '.'), *end = dot ? dot : raw + strlen(raw);
    int digits = (int)(end - raw) - (raw[0] == '-'), o = 0;
    for (const char *p = raw; *p && o < (int)len - 1; p++) {
        buf[o++] = *p;
        if (p < end - 1 && *p != '-' && --digits > 0 && digits % 3 == 0 && o < (int)len - 1) buf[o++] = ',';
    }
    buf[o] = 0;
}

/* Little's law with no queueing: N users / (R0 + Z), R0 the mean time of one request alone. */
static double rep_ideal_rps(const struct scenario *s)
{
    double r0 = 0;
    for (int i = 0; i < s->nsteps; i++) {
        const struct step *st = &s->prog[i];
        if (st->op == OP_CPU || st->op == OP_IO) r0 += dist_mean(&st->d);
        if (st->op == OP_CALL || st->op == OP_PAR) {
            double longest = 0; /* the mean of a maximum is more; this is a bound */
            for (int k = 0; k < st->nsvc; k++) {
                double mean = dist_mean(&s->svc[st->svc[k]].latency);
                if (mean > longest) longest = mean;
            }
            r0 += longest;
        }
    }
    if (s->users == 0) return s->rate;
    return (double)s->users / ((r0 + dist_mean(&s->think)) / SEC);
}

static void rep_text(FILE *out, const struct scenario *s, const char *path, const struct result res[MODEL_N])
{
    char a[32], b[32];
    fprintf(out, "Loom Lab simulation: %s (%s, seed %" PRIu64 ")\n", s->name, path, s->seed);
    if (s->users) fprintf(out, "  %ld users closed loop, think %.1f ms, ", s->users, dist_mean(&s->think) / 1e6);
    else fprintf(out, "  open loop %.1f req/s, ", s->rate);
    fprintf(out, "%d cores, %.1f s simulated (statistics after %.1f s)\n", s->cores,
            (double)s->duration / SEC, (double)s->warmup / SEC);
    fprintf(out, "  program: %s\n", s->program_text);
    fprintf(out, "  platform: maxThreads %d, minSpare %d;  virtual: parallelism %d carriers\n", s->max_threads,
            s->min_spare, s->parallelism);
    if (s->calibrated[0]) fprintf(out, "  from calibration: %s\n", s->calibrated);
    fputc('\n', out);
    fprintf(out, "  %-30s %14s %14s %10s\n", "", "platform", "virtual", "v / p");
    for (size_t i = 0; i < REP_NROWS; i++) {
        const struct rep_row *row = &rep_rows[i];
        double p = rep_get(&res[MODEL_PLATFORM], row), v = rep_get(&res[MODEL_VIRTUAL], row);
        rep_human(a, sizeof a, p, row->fmt);
        rep_human(b, sizeof b, v, row->fmt);
        fprintf(out, "  %-30s %14s %14s", row->label, a, b);
        if (p > 0 && row->fmt != R_INT) fprintf(out, " %9.2fx", v / p);
        else if (p > 0 && v > 0) fprintf(out, " %9.2fx", v / p);
        fputc('\n', out);
    }
    for (int k = 0; k < FAIL_N; k++)
        if (res[0].failed_kind[k] > 0 || res[1].failed_kind[k] > 0)
            fprintf(out, "  %-30s %14.0f %14.0f   %s\n", fail_names[k], res[0].failed_kind[k], res[1].failed_kind[k], fail_docs[k]);
    double ideal = rep_ideal_rps(s);
    rep_human(a, sizeof a, ideal, R_RATE);
    fprintf(out, "\n  Little's-law ideal (no queueing): %s req/s;  achieved: platform %.0f%%, virtual %.0f%%\n", a,
            100 * res[0].throughput_rps / ideal, 100 * res[1].throughput_rps / ideal);
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void rep_json_string(FILE *out, const char *str)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)str; *p; p++)
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p < 0x20) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out);
    fputc('"', out);
}

/* JSON for machines. Keys with a '.' open a sub-object; rows sharing a prefix are adjacent. */
static void rep_json(FILE *out, const struct scenario *s, const char *path, const struct result res[MODEL_N],
                     double wall_s, long peak_rss)
{
    double events = res[0].events + res[1].events;
    fputs("{\n  \"scenario\": ", out);
    rep_json_string(out, path);
    fputs(",\n  \"name\": ", out);
    rep_json_string(out, s->name);
    fprintf(out, ",\n  \"seed\": %" PRIu64 ",\n", s->seed);
    fprintf(out, "  \"engine\": {\"events\": %.0f, \"wall_s\": %.6f, \"events_per_s\": %.0f, \"peak_rss_bytes\": %ld},\n",
            events, wall_s, wall_s > 0 ? events / wall_s : 0, peak_rss);
    fprintf(out, "  \"ideal_rps\": %.3f,\n  \"calibrated_keys\": ", rep_ideal_rps(s));
    rep_json_string(out, s->calibrated);
    fputs(",\n", out);
    for (int mk = 0; mk < MODEL_N; mk++) {
        fprintf(out, "  \"%s\": {", model_names[mk]);
        const char *open = NULL;
        for (size_t i = 0; i < REP_NROWS; i++) {
            const char *key = rep_rows[i].key, *dot = strchr(key, '.');
            size_t plen = dot ? (size_t)(dot - key) : 0;
            int same = open && dot && strncmp(open, key, plen) == 0 && open[plen] == '.';
            if (open && !same) fputc('}', out), open = NULL;
            if (i) fputs(", ", out);
            if (dot && !same) fprintf(out, "\"%.*s\": {", (int)plen, key), open = key;
            double v = rep_get(&res[mk], &rep_rows[i]);
            if (rep_rows[i].fmt == R_INT || rep_rows[i].fmt == R_MIB) fprintf(out, "\"%s\": %.0f", dot ? dot + 1 : key, v);
            else fprintf(out, "\"%s\": %.6g", dot ? dot + 1 : key, v);
        }
        if (open) fputc('}', out);
        fputs(", \"failed_by_kind\": {", out);
        for (int k = 0; k < FAIL_N; k++) fprintf(out, "%s\"%s\": %.0f", k ? ", " : "", fail_names[k], res[mk].failed_kind[k]);
        fprintf(out, "}}%s\n", mk + 1 < MODEL_N ? "," : "");
    }
    fputs("}\n", out);
}

static void rep_csv(FILE *out, const struct scenario *s, const struct result res[MODEL_N])
{
    fputs("model,users,rate", out);
    for (size_t i = 0; i < REP_NROWS; i++) fprintf(out, ",%s", rep_rows[i].key);
    fputc('\n', out);
    for (int mk = 0; mk < MODEL_N; mk++) {
        fprintf(out, "%s,%ld,%g", model_names[mk], s->users, s->rate);
        for (size_t i = 0; i < REP_NROWS; i++) fprintf(out, ",%.6g", rep_get(&res[mk], &rep_rows[i]));
        fputc('\n', out);
    }
}

static int rep_series(const char *path, const struct model ms[MODEL_N])
{
    FILE *f = fopen(path, "w");
    if (!f) { fprintf(stderr, "sim: %s: %s\n", path, strerror(errno)); return -1; }
    fputs("model,t_s,rps,p99_ms,cpu_util,os_threads,threads_blocked,carriers_busy,vt_runnable,vt_parked,"
          "vt_pinned,queued,in_flight,ports_time_wait,ports_open,conns_busy,thread_mem_bytes,failed\n", f);
    for (int mk = 0; mk < MODEL_N; mk++)
        for (int i = 0; i < ms[mk].nseries; i++) {
            const struct sample *x = &ms[mk].series[i];
            fprintf(f, "%s,%.3f,%.1f,%.3f,%.4f,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%" PRId64 ",%" PRIu64 "\n",
                    model_names[mk], (double)x->t / SEC, x->rps, x->p99_ms, x->cpu_util, x->os_threads, x->blocked,
                    x->carriers_busy, x->vt_runnable, x->vt_parked, x->vt_pinned, x->queued, x->in_flight,
                    x->ports_tw, x->ports_open, x->conns_busy, x->thread_mem, x->failed);
        }
    return fclose(f);
}

/* Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one process per model, one
 * lane per OS thread or carrier, one span per running / ready / blocked interval. */
struct trace {
    FILE *f;
    uint64_t spans, max;
};

static void trace_span(struct model *m, int32_t t, int state, simtime from, simtime to)
{
    struct trace *tr = m->trace;
    if (tr->spans >= tr->max) return;
    tr->spans++;
    fprintf(tr->f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f}",
            thr_state_names[state], m->kind + 1, m->thr[t].id, (double)from / 1e3, (double)(to - from) / 1e3);
}

static int trace_open(struct trace *tr, const char *path)
{
    if (!(tr->f = fopen(path, "w"))) { fprintf(stderr, "sim: %s: %s\n", path, strerror(errno)); return -1; }
    tr->max = 2000000;
    fputs("[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"platform threads\"}},\n"
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,\"args\":{\"name\":\"virtual: carriers\"}}", tr->f);
    return 0;
}

static void trace_close(struct trace *tr)
{
    if (!tr->f) return;
    fputs("\n]\n", tr->f);
    fclose(tr->f);
    if (tr->spans >= tr->max) fprintf(stderr, "sim: trace truncated at %" PRIu64 " spans\n", tr->max);
}

/* ==== Validation ==== */

/* ./sim --validate results.csv: for each point the real aggregator's benchmark measured
 * (./aggregator bench), simulate the same configuration with the calibrated costs and put
 * prediction beside measurement. The scenario of a point is built from text through scn_set,
 * so it is checked like any scenario, and the calibration file and --set apply on top. */

/* The columns a results CSV must have, in any order (more are ignored). */
enum val_col { VC_USERS, VC_MODE, VC_POOL, VC_FANOUT, VC_DELAY, VC_RPS, VC_P50, VC_P99, VC_THREADS, VC_RSS, VC_N };
static const char *const val_cols[VC_N] = {"users", "mode", "pool", "fanout", "delay_ms", "throughput_rps",
                                           "p50_ms", "p99_ms", "peak_threads", "peak_rss_bytes"};

/* The metrics compared, measured vs predicted. */
enum val_metric { VM_RPS, VM_P50, VM_P99, VM_THREADS, VM_RSS, VM_N };
static const struct { const char *json, *label; int col; size_t off; double scale; } val_metrics[VM_N] = {
    {"throughput_rps", "req/s", VC_RPS, RR(throughput_rps), 1},
    {"p50_ms", "p50 ms", VC_P50, RR(p50), 1},
    {"p99_ms", "p99 ms", VC_P99, RR(p99), 1},
    {"peak_threads", "threads", VC_THREADS, RR(peak_os_threads), 1},
    {"peak_rss_bytes", "RSS MiB", VC_RSS, RR(peak_rss), 1},
};

struct val_point {
    long users;
    int fanout, pooled, mode;
    double delay_ms;
    double measured[VM_N], predicted[VM_N];
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
        if (!comma) break;
        *comma = 0;
        p = comma + 1;
    }
    return n;
}

static int val_number(const char *text, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    return end != text && !*scn_skip_space(end) && !errno && isfinite(*out) ? 0 : -1;
}

/* Simulate one point: the aggregator with K calls of D ms to one backend, think 0. */
static int val_simulate(struct val_point *pt, const char *calibration, const char *const *sets, int nsets,
                        char *err, size_t errlen)
{
    struct scenario s;
    char program[256] = "", value[64];
    struct scn_src src = {"validate", 0, err, errlen};
    scn_defaults(&s);
    for (int i = 0; i < pt->fanout && i < 60; i++) strcat(program, "call(backend) ");
    snprintf(value, sizeof value, "%ld", pt->users);
    const char *kv[][2] = {{"users", value}, {"think", "0"}, {"duration", "20s"}, {"warmup", "5s"},
                           {"program", program}, {"service.backend.pool", pt->pooled ? "100000" : "0"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (scn_set(&s, kv[i][0], kv[i][1], &src) < 0) return -1;
    snprintf(value, sizeof value, "%.6gms", pt->delay_ms);
    if (scn_set(&s, "service.backend.latency", pt->delay_ms > 0 ? value : "0", &src) < 0) return -1;
    if (calibration && scn_load_keys(&s, calibration, s.calibrated, sizeof s.calibrated, err, errlen) < 0) return -1;
    for (int i = 0; i < nsets; i++) {
        char buf[1024], *key, *val;
        snprintf(buf, sizeof buf, "%s", sets[i]);
        if (scn_split(buf, &key, &val) < 0 || scn_set(&s, key, val, &src) < 0) return scn_fail(&src, "bad --set %s", sets[i]);
    }
    if (scn_finish(&s, "validate", err, errlen) < 0) return -1;
    struct model m;
    struct result r;
    model_init(&m, &s, pt->mode);
    model_run(&m, s.duration);
    rep_result(&m, &r);
    model_free(&m);
    for (int k = 0; k < VM_N; k++) pt->predicted[k] = *(const double *)((const char *)&r + val_metrics[k].off);
    return 0;
}

static int val_read(const char *path, struct val_point **points, int *npoints, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    struct scn_src src = {path, 0, err, errlen};
    if (!f) return scn_fail(&src, "cannot open: %s", strerror(errno));
    char line[2048], *field[64];
    int col[VC_N], ncols = 0, cap = 0, rc = 0;
    *points = NULL, *npoints = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        src.line++;
        int n = val_split(line, field, 64);
        if (src.line == 1) { /* the header names the columns */
            ncols = n;
            for (int c = 0; c < VC_N; c++) {
                col[c] = -1;
                for (int i = 0; i < n; i++)
                    if (!strcmp(field[i], val_cols[c])) col[c] = i;
                if (col[c] < 0) rc = scn_fail(&src, "no column '%s' in the header", val_cols[c]);
            }
            continue;
        }
        if (n == 1 && !*field[0]) continue;
        if (n != ncols) { rc = scn_fail(&src, "%d fields, the header has %d", n, ncols); break; }
        struct val_point pt = {0};
        double users, fanout;
        const char *mode = field[col[VC_MODE]], *pool = field[col[VC_POOL]];
        pt.mode = !strcmp(mode, "platform") ? MODEL_PLATFORM : !strcmp(mode, "virtual") ? MODEL_VIRTUAL : -1;
        pt.pooled = !strcmp(pool, "on") || !strcmp(pool, "1") ? 1 : !strcmp(pool, "off") || !strcmp(pool, "0") ? 0 : -1;
        if (pt.mode < 0) { rc = scn_fail(&src, "mode '%s' is not platform or virtual", mode); break; }
        if (pt.pooled < 0) { rc = scn_fail(&src, "pool '%s' is not on or off", pool); break; }
        if (val_number(field[col[VC_USERS]], &users) < 0 || users < 1 || users > 1e7 || users != floor(users) ||
            val_number(field[col[VC_FANOUT]], &fanout) < 0 || fanout < 1 || fanout > 60 || fanout != floor(fanout) ||
            val_number(field[col[VC_DELAY]], &pt.delay_ms) < 0 || pt.delay_ms < 0 || pt.delay_ms > 3.6e6) {
            rc = scn_fail(&src, "users, fanout or delay_ms out of range");
            break;
        }
        pt.users = (long)users, pt.fanout = (int)fanout;
        for (int k = 0; k < VM_N && rc == 0; k++)
            if (val_number(field[col[val_metrics[k].col]], &pt.measured[k]) < 0 || pt.measured[k] < 0)
                rc = scn_fail(&src, "%s: '%s' is not a number >= 0", val_cols[val_metrics[k].col], field[col[val_metrics[k].col]]);
        if (rc) break;
        if (*npoints == cap) *points = xrealloc(*points, (size_t)(cap = cap ? 2 * cap : 16), sizeof **points);
        (*points)[(*npoints)++] = pt;
    }
    fclose(f);
    if (rc == 0 && *npoints == 0) rc = scn_fail(&src, "no data rows");
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

/* Median and maximum of |relative error| of one metric over all points. */
static void val_summary(const struct val_point *p, int n, int metric, double *median, double *max)
{
    double *e = xrealloc(NULL, (size_t)n, sizeof *e);
    for (int i = 0; i < n; i++) e[i] = fabs(val_rel(p[i].measured[metric], p[i].predicted[metric]));
    qsort(e, (size_t)n, sizeof *e, val_cmp_double);
    *median = n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2;
    *max = e[n - 1];
    free(e);
}

static void val_print_text(FILE *out, const struct val_point *p, int n)
{
    fprintf(out, "%7s %-8s %-4s %2s %6s", "users", "mode", "pool", "K", "D ms");
    for (int k = 0; k < VM_N; k++) fprintf(out, " | %9s %9s %6s", val_metrics[k].label, "predicted", "error");
    fputc('\n', out);
    for (int i = 0; i < n; i++) {
        fprintf(out, "%7ld %-8s %-4s %2d %6.1f", p[i].users, model_names[p[i].mode], p[i].pooled ? "on" : "off",
                p[i].fanout, p[i].delay_ms);
        for (int k = 0; k < VM_N; k++) {
            double scale = k == VM_RSS ? 1.0 / 1048576 : 1;
            fprintf(out, " | %9.1f %9.1f %+5.0f%%", p[i].measured[k] * scale, p[i].predicted[k] * scale,
                    100 * val_rel(p[i].measured[k], p[i].predicted[k]));
        }
        fputc('\n', out);
    }
    double med, max;
    fputs("summary: |relative error| median (max):", out);
    for (int k = 0; k < VM_N; k++) {
        val_summary(p, n, k, &med, &max);
        fprintf(out, "  %s %.1f%% (%.1f%%)", val_metrics[k].json, 100 * med, 100 * max);
    }
    fputc('\n', out);
}

static void val_print_json(FILE *out, const struct val_point *p, int n)
{
    fputs("{\"points\": [\n", out);
    for (int i = 0; i < n; i++) {
        fprintf(out, "  {\"users\": %ld, \"mode\": \"%s\", \"pool\": \"%s\", \"fanout\": %d, \"delay_ms\": %g", p[i].users,
                model_names[p[i].mode], p[i].pooled ? "on" : "off", p[i].fanout, p[i].delay_ms);
        for (int k = 0; k < VM_N; k++)
            fprintf(out, ", \"%s\": {\"measured\": %.6g, \"predicted\": %.6g, \"rel_error\": %.6g}", val_metrics[k].json,
                    p[i].measured[k], p[i].predicted[k], val_rel(p[i].measured[k], p[i].predicted[k]));
        fprintf(out, "}%s\n", i + 1 < n ? "," : "");
    }
    fputs("],\n\"summary\": {", out);
    for (int k = 0; k < VM_N; k++) {
        double med, max;
        const char *name = k == VM_RPS ? "throughput" : k == VM_P50 ? "p50" : k == VM_P99 ? "p99" : k == VM_THREADS ? "threads" : "rss";
        val_summary(p, n, k, &med, &max);
        fprintf(out, "%s\"%s_median_rel_error\": %.6g, \"%s_max_rel_error\": %.6g", k ? ", " : "", name, med, name, max);
    }
    fputs("}}\n", out);
}

/* ==== Live telemetry ==== */

/* ./sim --live http://127.0.0.1:PORT polls a running ./aggregator's /metrics (Prometheus
 * text format) and turns successive scrapes into the same kind of time series the models
 * produce, so the window can draw measurement and prediction on one clock. Only loopback
 * addresses are accepted: this is a teaching tool, not a network scraper. */

#define LIVE_MAX_LE 64
#define LIVE_MAX_BODY (256 * 1024)

/* One scrape: counters and gauges as the aggregator reports them. */
struct live_scrape {
    double requests, errors, os_threads, rss, vt_parked, vt_runnable, carriers_busy;
    double pool_busy, pool_queue, connections, conns_opened, carriers, pool_size;
    int nle;
    double le[LIVE_MAX_LE], cum[LIVE_MAX_LE]; /* latency histogram: upper bounds (s), cumulative counts */
};

/* What successive scrapes say about an interval; times in s since the first scrape. */
struct live_sample {
    double t, rps, errors_per_s, p50_ms, p99_ms;
    double os_threads, rss, vt_parked, carriers_busy, connections, pool_queue;
};

struct live {
    char host[64];
    int port, family;
    double t0, last_t;          /* wall times of the first and the previous scrape, s */
    struct live_scrape last;    /* the previous scrape, for deltas */
    int have_last;
    struct live_sample *v;
    int n, cap;
};

/* The gauges read by name: one row each. */
static const struct { const char *name; size_t off; } live_gauges[] = {
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
    static const struct { const char *host; int family; } loopback[] = {
        {"127.0.0.1:", AF_INET}, {"localhost:", AF_INET}, {"[::1]:", AF_INET6}};
    for (size_t i = 0; p && i < sizeof loopback / sizeof loopback[0]; i++) {
        size_t n = strlen(loopback[i].host);
        if (strncmp(p, loopback[i].host, n)) continue;
        char *end;
        long port = strtol(p + n, &end, 10);
        if (end == p + n || (*end && *end != '/') || port < 1 || port > 65535) break;
        snprintf(lv->host, sizeof lv->host, "%s", loopback[i].family == AF_INET ? "127.0.0.1" : "::1");
        lv->port = (int)port, lv->family = loopback[i].family;
        return 0;
    }
    snprintf(err, errlen, "--live %s: want http://127.0.0.1:PORT (or localhost, [::1]); only loopback", url);
    return -1;
}

/* GET /metrics; the body goes to a malloc'd NUL-terminated string. Bounded by timeouts. */
static char *live_fetch(const struct live *lv, char *err, size_t errlen)
{
    int fd = socket(lv->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {2, 0};
    struct sockaddr_storage sa = {0};
    socklen_t salen;
    if (lv->family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&sa;
        a->sin_family = AF_INET, a->sin_port = htons((uint16_t)lv->port);
        inet_pton(AF_INET, lv->host, &a->sin_addr);
        salen = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&sa;
        a->sin6_family = AF_INET6, a->sin6_port = htons((uint16_t)lv->port);
        inet_pton(AF_INET6, lv->host, &a->sin6_addr);
        salen = sizeof *a;
    }
    if (fd < 0) { snprintf(err, errlen, "live: socket: %s", strerror(errno)); return NULL; }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    static const char req[] = "GET /metrics HTTP/1.1\r\nHost: loomlab\r\nConnection: close\r\n\r\n";
    char *buf = NULL;
    size_t len = 0;
    if (connect(fd, (struct sockaddr *)&sa, salen) < 0 || write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
        snprintf(err, errlen, "live: %s port %d: %s", lv->host, lv->port, strerror(errno));
        close(fd);
        return NULL;
    }
    buf = xrealloc(NULL, LIVE_MAX_BODY + 1, 1);
    for (ssize_t got; len < LIVE_MAX_BODY && (got = read(fd, buf + len, LIVE_MAX_BODY - len)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { snprintf(err, errlen, "live: read: %s", strerror(errno)); len = 0; break; }
        len += (size_t)got;
    }
    close(fd);
    buf[len] = 0;
    char *body = strstr(buf, "\r\n\r\n");
    if (!len || strncmp(buf, "HTTP/1.", 7) || strncmp(buf + 8, " 200", 4) || !body) {
        if (len) snprintf(err, errlen, "live: /metrics did not answer 200 with a body");
        free(buf);
        return NULL;
    }
    memmove(buf, body + 4, strlen(body + 4) + 1);
    return buf;
}

/* Parse the Prometheus text format: `name{labels} value` lines, `#` comments. Unknown names
 * are skipped; a line that is not of that shape is an error with its line number. */
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
        if (!l[0] || l[0] == '#') continue;
        char *sp = strrchr(l, ' '), *end;
        if (!sp) { snprintf(err, errlen, "/metrics:%d: no value", line); return -1; }
        *sp = 0;
        double v = strtod(sp + 1, &end);
        if (end == sp + 1 || *end) { snprintf(err, errlen, "/metrics:%d: bad value '%s'", line, sp + 1); return -1; }
        if (!strncmp(l, "agg_requests_total{", 19)) {
            const char *st = strstr(l, "status=\"");
            sc->requests += v;
            if (st && st[8] != '2') sc->errors += v;
        } else if (!strncmp(l, "agg_request_seconds_bucket{le=\"", 31) && sc->nle < LIVE_MAX_LE) {
            sc->le[sc->nle] = strncmp(l + 31, "+Inf", 4) ? strtod(l + 31, NULL) : INFINITY;
            sc->cum[sc->nle++] = v;
        } else {
            for (size_t g = 0; g < sizeof live_gauges / sizeof live_gauges[0]; g++)
                if (!strcmp(l, live_gauges[g].name)) *(double *)((char *)sc + live_gauges[g].off) = v;
        }
    }
    return 0;
}

/* The q-quantile (ms) of the requests between two scrapes, interpolated inside its bucket. */
static double live_quantile(const struct live_scrape *a, const struct live_scrape *b, double q)
{
    int n = a->nle < b->nle ? a->nle : b->nle;
    if (n == 0) return 0;
    double total = b->cum[n - 1] - a->cum[n - 1], want = q * total, below = 0, lo = 0;
    if (total <= 0) return 0;
    for (int i = 0; i < n; i++) {
        double c = b->cum[i] - a->cum[i];
        if (c >= want) {
            double hi = isfinite(b->le[i]) ? b->le[i] : lo * 2;
            double in = c - below;
            return 1e3 * (lo + (hi - lo) * (in > 0 ? (want - below) / in : 1));
        }
        below = c, lo = b->le[i];
    }
    return 1e3 * lo;
}

/* Scrape once at wall time `now` (s) and append a sample; the first scrape only sets t0. */
static int live_poll(struct live *lv, double now, char *err, size_t errlen)
{
    struct live_scrape sc;
    char *body = live_fetch(lv, err, errlen);
    if (!body) return -1;
    int rc = live_parse(body, &sc, err, errlen);
    free(body);
    if (rc < 0) return -1;
    if (!lv->have_last) lv->t0 = now;
    double dt = lv->have_last ? now - lv->last_t : 0;
    if (dt > 0) {
        struct live_sample x = {
            .t = now - lv->t0,
            .rps = (sc.requests - lv->last.requests) / dt,
            .errors_per_s = (sc.errors - lv->last.errors) / dt,
            .p50_ms = live_quantile(&lv->last, &sc, 0.50),
            .p99_ms = live_quantile(&lv->last, &sc, 0.99),
            .os_threads = sc.os_threads, .rss = sc.rss, .vt_parked = sc.vt_parked,
            .carriers_busy = sc.carriers_busy, .connections = sc.connections, .pool_queue = sc.pool_queue};
        if (lv->n == lv->cap) lv->v = xrealloc(lv->v, (size_t)(lv->cap = lv->cap ? 2 * lv->cap : 64), sizeof *lv->v);
        lv->v[lv->n++] = x;
    }
    lv->last = sc, lv->last_t = now;
    lv->have_last = 1;
    return 0;
}

/* The model a live aggregator runs: carriers mean virtual threads. */
static int live_mode(const struct live *lv) { return lv->last.carriers > 0 ? MODEL_VIRTUAL : MODEL_PLATFORM; }

/* ==== Window ==== */

/* (The SDL2 window and headless screenshots live here; see ui_main.) */

/* ==== Command line ==== */

static const char sim_usage[] =
    "usage: ./sim [--headless] SCENARIO.scn [options]\n"
    "       ./sim --keys          list every scenario key with its default\n"
    "\n"
    "Simulates the scenario with platform threads (1:1, a Tomcat-like pool) and virtual\n"
    "threads (M:N, Loom) on the same workload, and reports them side by side.\n"
    "\n"
    "  --headless          print the report instead of opening the window\n"
    "  --seed N            random seed (default: the scenario's `seed`)\n"
    "  --set KEY=VALUE     override a scenario key (repeatable), e.g. --set users=1000\n"
    "  --json | --csv      the report for machines instead of the table\n"
    "  --series FILE.csv   write the time series of both models\n"
    "  --trace FILE.json   write a Chrome trace (open it in Perfetto): a lane per thread\n"
    "  --calibration FILE  apply measured costs (./aggregator calibrate) over the scenario\n"
    "  --live URL          poll a running ./aggregator's /metrics (http://127.0.0.1:PORT) and\n"
    "                      put it beside the scenario's prediction, once a second\n"
    "  --at TIME           with --live: stop after TIME (default: the scenario's duration)\n"
    "  --validate FILE.csv simulate each point of ./aggregator bench's results and compare\n"
    "                      (with --calibration; --json for machines; no scenario needed)\n"
    "  --quiet             no progress on stderr\n"
    "  -h, --help          this text\n";

struct options {
    const char *scenario;
    const char *sets[128];
    int nsets;
    const char *seed;
    int headless, json, csv, quiet;
    const char *series, *trace, *calibration, *validate, *live, *at;
};

static int opt_fail(const char *fmt, const char *arg)
{
    fprintf(stderr, "sim: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(./sim --help for usage)\n");
    return 2;
}

/* Parse argv into *o; returns 0, 1 for "done" (help, keys), or 2 on a bad flag. */
static int opt_parse(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(sim_usage, stdout); return 1; }
        else if (!strcmp(a, "--keys")) { scn_print_keys(stdout); return 1; }
        else if (!strcmp(a, "--headless")) o->headless = 1;
        else if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--csv")) o->csv = 1;
        else if (!strcmp(a, "--quiet")) o->quiet = 1;
        else if (!strcmp(a, "--seed") || !strcmp(a, "--set") || !strcmp(a, "--series") || !strcmp(a, "--trace") ||
                 !strcmp(a, "--calibration") || !strcmp(a, "--validate") || !strcmp(a, "--live") ||
                 !strcmp(a, "--at")) {
            if (!has_value) return opt_fail("%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--seed")) o->seed = v;
            else if (!strcmp(a, "--calibration")) o->calibration = v;
            else if (!strcmp(a, "--validate")) o->validate = v;
            else if (!strcmp(a, "--live")) o->live = v;
            else if (!strcmp(a, "--at")) o->at = v;
            else if (!strcmp(a, "--series")) o->series = v;
            else if (!strcmp(a, "--trace")) o->trace = v;
            else if (o->nsets == (int)(sizeof o->sets / sizeof o->sets[0])) return opt_fail("too many --set (%s)", v);
            else o->sets[o->nsets++] = v;
        } else if (a[0] == '-') return opt_fail("unknown option '%s'", a);
        else if (o->scenario) return opt_fail("one scenario at a time ('%s' is extra)", a);
        else o->scenario = a;
    }
    if (!o->scenario && !o->validate) return opt_fail("%s", "no scenario file given");
    if (o->json && o->csv) return opt_fail("%s", "--json or --csv, not both");
    return 0;
}

/* Defaults, then the file at `path`, then each --set, then --seed, then the cross-key
 * checks. The window calls it again to restart or switch scenario. */
static int sim_load(struct scenario *s, const char *path, const struct options *o, char *err, size_t errlen)
{
    scn_defaults(s);
    if (scn_load(s, path, err, errlen) < 0) return -1;
    if (o->calibration && scn_load_keys(s, o->calibration, s->calibrated, sizeof s->calibrated, err, errlen) < 0) return -1;
    for (int i = 0; i < o->nsets; i++) {
        char buf[1024], label[1100], *key, *value;
        snprintf(buf, sizeof buf, "%s", o->sets[i]);
        snprintf(label, sizeof label, "--set %s", o->sets[i]);
        struct scn_src src = {label, 0, err, errlen};
        if (scn_split(buf, &key, &value) < 0) return scn_fail(&src, "want KEY=VALUE");
        if (scn_set(s, key, value, &src) < 0) return -1;
    }
    if (o->seed) {
        char label[64];
        snprintf(label, sizeof label, "--seed %.40s", o->seed);
        struct scn_src src = {label, 0, err, errlen};
        if (scn_set(s, "seed", o->seed, &src) < 0) return -1;
    }
    return scn_finish(s, path, err, errlen);
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run one model to the end, with a progress line on a terminal. */
static void sim_run_model(struct model *m, int progress)
{
    if (!progress) { model_run(m, m->s->duration); return; }
    double next = wall_now() + 0.5;
    while (model_step(m, m->s->duration) >= 0)
        if ((m->st.events & 0xfffff) == 0 && wall_now() > next) {
            fprintf(stderr, "\rsim: %s model at t = %.1f / %.1f s ", model_names[m->kind], (double)m->now / SEC,
                    (double)m->s->duration / SEC);
            next = wall_now() + 0.5;
        }
    fprintf(stderr, "\r%60s\r", "");
}

static int sim_headless(const struct scenario *s, const struct options *o)
{
    struct model ms[MODEL_N];
    struct result res[MODEL_N];
    struct trace tr = {0};
    int rc = 0;
    if (o->trace && trace_open(&tr, o->trace) < 0) return 1;
    double t0 = wall_now();
    for (int k = 0; k < MODEL_N; k++) {
        model_init(&ms[k], s, k);
        if (tr.f) ms[k].trace = &tr;
        sim_run_model(&ms[k], !o->quiet && isatty(2));
        if (ms[k].stuck) {
            fprintf(stderr, "sim: the %s model cannot advance time at t=%.9f s: requests take no time and\n"
                            "users do not think (a zero-time loop); give the program or `think` some time\n",
                    model_names[k], (double)ms[k].now / SEC);
            for (int j = 0; j <= k; j++) model_free(&ms[j]);
            trace_close(&tr);
            return 3;
        }
        rep_result(&ms[k], &res[k]);
    }
    double wall = wall_now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (o->json) rep_json(stdout, s, o->scenario, res, wall, ru.ru_maxrss * 1024L);
    else if (o->csv) rep_csv(stdout, s, res);
    else rep_text(stdout, s, o->scenario, res);
    fflush(stdout);
    if (!o->json && !o->quiet)
        fprintf(stderr, "sim: %.0f events in %.3f s (%.2f M events/s), peak RSS %.1f MiB\n", res[0].events + res[1].events,
                wall, (res[0].events + res[1].events) / wall / 1e6, ru.ru_maxrss / 1024.0);
    if (o->series && rep_series(o->series, ms) < 0) rc = 1;
    trace_close(&tr);
    for (int k = 0; k < MODEL_N; k++) model_free(&ms[k]);
    return rc;
}

static int sim_validate(const struct options *o)
{
    struct val_point *points = NULL;
    int n = 0;
    char err[512];
    if (val_read(o->validate, &points, &n, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    for (int i = 0; i < n; i++)
        if (val_simulate(&points[i], o->calibration, o->sets, o->nsets, err, sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            free(points);
            return 2;
        }
    if (o->json) val_print_json(stdout, points, n);
    else val_print_text(stdout, points, n);
    free(points);
    return 0;
}

/* --at TIME, or the scenario's duration; -1 after printing an error. */
static simtime opt_at(const struct scenario *s, const struct options *o)
{
    char err[256];
    const char *end;
    double ns;
    struct scn_src src = {"--at", 0, err, sizeof err};
    if (!o->at) return s->duration;
    if (scn_time(&src, o->at, &end, &ns) < 0 || *end) {
        fprintf(stderr, "%s\n", *end ? "--at: want a time such as 5s" : err);
        return -1;
    }
    return (simtime)ns;
}

/* The mean of a model's sampled series over (from, to]: what it predicts for one interval. */
static struct sample model_mean_sample(const struct model *m, simtime from, simtime to)
{
    struct sample mean = {0};
    int n = 0;
    for (int i = 0; i < m->nseries; i++) {
        const struct sample *x = &m->series[i];
        if (x->t <= from || x->t > to) continue;
        mean.rps += x->rps, mean.p99_ms += x->p99_ms, mean.os_threads += x->os_threads;
        mean.vt_parked += x->vt_parked, mean.thread_mem += x->thread_mem, mean.in_flight += x->in_flight;
        n++;
    }
    if (n) {
        mean.rps /= n, mean.p99_ms /= n, mean.os_threads /= n, mean.vt_parked /= n;
        mean.thread_mem /= n, mean.in_flight /= n;
    }
    return mean;
}

/* --live without a window: one row a second, measured beside predicted. */
static int sim_live_text(const struct scenario *s, const struct options *o)
{
    struct live lv = {0};
    char err[512];
    simtime until = opt_at(s, o);
    if (until < 0) return 2;
    if (live_parse_url(&lv, o->live, err, sizeof err) < 0) { fprintf(stderr, "sim: %s\n", err); return 2; }
    if (live_poll(&lv, wall_now(), err, sizeof err) < 0) {
        fprintf(stderr, "sim: %s (is ./aggregator serve running there?)\n", err);
        return 1;
    }
    struct model m;
    int mode = live_mode(&lv);
    model_init(&m, s, mode);
    printf("live %s (%s mode) beside %s, predicted by the %s model\n", o->live, model_names[mode], o->scenario, model_names[mode]);
    printf("%6s | %9s %9s | %9s %9s | %7s %7s | %8s %8s | %8s %8s\n", "t s", "req/s", "predicted", "p99 ms",
           "predicted", "threads", "pred", "parked", "pred", "RSS MiB", "pred");
    int rc = 0;
    while (lv.n == 0 || lv.v[lv.n - 1].t * SEC < (double)until) {
        struct timespec second = {1, 0};
        while (nanosleep(&second, &second) < 0 && errno == EINTR) {} /* the polling interval */
        if (live_poll(&lv, wall_now(), err, sizeof err) < 0) { fprintf(stderr, "sim: %s\n", err); rc = 1; break; }
        const struct live_sample *x = &lv.v[lv.n - 1];
        simtime t = (simtime)(x->t * SEC), from = lv.n > 1 ? (simtime)(lv.v[lv.n - 2].t * SEC) : 0;
        model_run(&m, t);
        struct sample p = model_mean_sample(&m, from, t);
        int64_t rss = s->mem_base + p.thread_mem + (int64_t)p.in_flight * s->mem_per_request;
        printf("%6.1f | %9.1f %9.1f | %9.1f %9.1f | %7.0f %7d | %8.0f %8d | %8.1f %8.1f\n", x->t, x->rps, p.rps,
               x->p99_ms, p.p99_ms, x->os_threads, p.os_threads, x->vt_parked, p.vt_parked, x->rss / 1048576,
               (double)rss / 1048576);
        fflush(stdout);
    }
    model_free(&m);
    free(lv.v);
    return rc;
}

#ifndef SIM_NO_MAIN
int main(int argc, char **argv)
{
    struct options o;
    struct scenario s;
    char err[512];
    int rc = opt_parse(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : rc;
    if (o.validate) return sim_validate(&o);
    if (sim_load(&s, o.scenario, &o, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (o.live) return sim_live_text(&s, &o);
    return sim_headless(&s, &o);
}
#endif

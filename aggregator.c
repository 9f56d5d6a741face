/* aggregator.c: the real system that Loom Lab measures. An HTTP aggregator in two execution
 * models, platform (a Tomcat-like pool of OS threads, 1:1) and virtual (our own M:N green
 * threads on epoll, like Java's Loom), with the downstream backend it calls and the tools that
 * measure it. For each GET /aggregate it calls K downstream services (GET /item/0 .. /item/K-1)
 * and answers with their bodies as a JSON array. sim.c models this system; `calibrate` measures
 * the costs the model takes as parameters.
 *
 *   make aggregator
 *   ./aggregator backend --port 9100 --delay-ms 50
 *   ./aggregator serve --mode virtual --port 9101 --backends 127.0.0.1:9100
 *   ./aggregator load --url http://127.0.0.1:9101/aggregate --users 1000 --duration 10
 *   ./aggregator bench --users 100,1000,5000      (all of the above; --server java: the JVM's)
 *   ./aggregator microbench                       (switch, park, create, RSS per thread)
 *   ./aggregator calibrate --out calibration.ini  (the simulator's costs, measured)
 *   ./aggregator netns --ports 1000 -- CMD        (CMD where the ports run out: the wall)
 *
 * Reading path. The lesson, an evening: I.2 to I.8, from the ~~~~ banner where the lesson begins
 * to the one where the lesson ends: a virtual thread in its simplest correct form (swap, types,
 * run queue, park/unpark, switching, carrier loop); stop there. Then I.9's fast paths behind I.3's
 * seam (make test-simple: without them), II's "life of a request", I.10's I/O; banners name tests.
 *
 * Contents (each line is a banner below, in this order):
 *   Part I. The M:N runtime
 *     I.1 Utilities              time, errors, buffers, /proc, signals, spinlock, sanitizers
 *     I.2 Context switch         the register swap in assembly (ucontext elsewhere, in I.1)
 *     I.3 Virtual threads        vt_ carrier_ rt: the stack design, types, runtime, the seam
 *     I.4 Timer heap             timer_ deadlines of parked threads, O(log n)
 *     I.5 Run queue              runq_ work stealing, wake-ups, Loom's park/unpark protocol
 *     I.6 Copied stacks          vt_stack_save/restore: frames to the heap and back
 *     I.7 Switching              to the scheduler and back; park, yield, exit, spawn, join
 *     I.8 The carrier loop       carrier_main: timers, batches, stealing, epoll, sleep
 *     I.9 Fast paths             fast_ front slot, direct switch, kept stack, polling
 *     I.10 I/O                   io_ read/write/connect/accept: park or block, one code path
 *     I.11 Interface             rt_start/join/run, overflow, pinning, io_quiet: all II, III use
 *   Part II. The service
 *     II.1 HTTP                  http_ pure request/response parsers, the response writer
 *     II.2 Metrics               metrics_ counters and the Prometheus text page
 *     II.3 Connections           config, server, conn_: serve one request (every server)
 *     II.4 Aggregate             agg_ the /aggregate handler, sequential or fanned out
 *     II.5 Downstream            client_ ds_: keep-alive pools and the downstream call
 *     II.6 Backend               backend_route: GET /item/<i> after D ms, a timed park
 *     II.7 Platform server       pool_ Tomcat-like acceptor/poller and growing executor
 *     II.8 Virtual server        vserver_ vconn_: one virtual thread per connection
 *     II.9 Bearer tokens         auth_ jwt_ b64url_: serve --auth (JWT, libcrypto), load's tokens
 *   Part III. Lab tools
 *     III.1 Statistics           hist_ stat_t975 csv_ (sim.c's text), ci95_ Student-t intervals
 *     III.2 Load generator       load_ closed-loop users or an open-loop rate
 *     III.3 Bench                bench_ jvm_ netns_ the grid (C or JVM), CSV, the port wall
 *     III.4 Microbench           mb_ switch, yield, park, create, RSS per parked thread
 *     III.5 Calibrate            cal_ the simulator's costs, measured, as scenario keys
 *   Part IV. The command line
 *     IV.1 Options               opt_ flag tables, typed at parse time, --help from them
 *     IV.2 Subcommands           cmd_ serve, backend, load, bench, microbench, calibrate, netns
 *     IV.3 main                  the command table
 *
 * Conventions. All but main is static; one prefix per subsystem. Global state: `rt` and
 * `carrier_self` (Part I only), `metrics_counters`. Times are int64 ns of CLOCK_MONOTONIC
 * unless a name says _ms, _us or _s. Out of memory aborts; errors return -1 with errno. New
 * endpoint: a handler in agg_route; new subcommand: a cmd_ function and a line in IV.3's table.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h> /* serve --auth (II.9): Debian's libssl-dev */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#if defined(__SANITIZE_ADDRESS__)
#define VT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VT_ASAN 1
#endif
#endif
#ifdef VT_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define VT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VT_TSAN 1
#endif
#endif
#ifdef VT_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#ifdef VT_VALGRIND
#include <valgrind/memcheck.h>
#endif

#if defined(__x86_64__) && !defined(VT_UCONTEXT)
#define VT_SWITCH_X86_64 1
#elif defined(__aarch64__) && !defined(VT_UCONTEXT)
#define VT_SWITCH_AARCH64 1
#else
#define VT_SWITCH_UCONTEXT 1
#include <ucontext.h>
#endif

/* errno after a park. glibc declares __errno_location const, so a compiler may compute
 * errno's address once per function and reuse it after a call; a virtual thread that parks
 * may resume on another carrier (another OS thread, another errno), and the reused address
 * would be the old thread's. This accessor cannot be merged (its volatile asm makes it
 * neither const nor pure), so every use of errno asks the thread it runs on. */
__attribute__((noinline)) static int *vt_errno_location(void)
{
    __asm__ volatile("");
    return __errno_location();
}
#undef errno
#define errno (*vt_errno_location())

/* ==== Part I. The M:N runtime ==== */

/* Virtual threads on carrier threads, as Loom runs them: a virtual thread that would block
 * parks instead (its frames are set aside, its fd is watched by the carrier's epoll) and the
 * carrier runs another one. Built from the bottom: the utilities, then the lesson (the
 * register swap, the thread and carrier types, the timers, the run queue and park/unpark,
 * the copied stacks, the switches between a thread and its carrier's scheduler, the carrier
 * loop: the mechanism in its simplest form), then the fast paths behind their seam, the I/O
 * calls that park a virtual thread or block a platform thread through one code path, and
 * the interface the other Parts use (start, stop, run).
 * Tests: tests/test_aggregator.c, test_spawn_join to test_overflow (switching, timers, readiness,
 * the stale check, pinning, 100,000 parked threads, stealing, joins across carriers, the kept
 * stack, stack overflow); make tsan runs them under ThreadSanitizer, make asan under ASan,
 * make valgrind under Memcheck. */

/* ---- I.1 Utilities ---- */

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define NS_PER_MS    1000000LL
#define NS_PER_S     1000000000LL
#define STR_(x)      #x
#define STR(x)       STR_(x) /* a numeric macro's value as a string literal, for --help */

/* Monotonic clock in nanoseconds: every deadline in this file is an absolute value of it. */
static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("aggregator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* Bytes allocated through xmalloc, xcalloc and xrealloc since the process started (a
 * realloc counts its new size), for /metrics' agg_alloc_bytes_total: the JVM server reports
 * its threads' allocated bytes, and the two divided by the requests served compare the
 * allocation per request. Each OS thread adds to one of ALLOC_STRIPES counters, each on its
 * own cache line, taken round-robin at its first allocation, so that carriers and pool
 * threads seldom share a line; a reader sums them. */
#define ALLOC_STRIPES 64
static struct {
    uint64_t bytes; /* atomic */
    char pad[64 - sizeof(uint64_t)];
} alloc_stripes[ALLOC_STRIPES];
static unsigned alloc_next_stripe; /* atomic */
static __thread int alloc_stripe = -1;

/* noinline: a virtual thread may resume on another OS thread after a park, so the address
 * of a thread-local must not be kept across one; here it is taken and used with none between. */
__attribute__((noinline)) static void alloc_count(size_t n)
{
    if (alloc_stripe < 0)
        alloc_stripe =
            (int)(__atomic_fetch_add(&alloc_next_stripe, 1, __ATOMIC_RELAXED) % ALLOC_STRIPES);
    __atomic_fetch_add(&alloc_stripes[alloc_stripe].bytes, (uint64_t)n, __ATOMIC_RELAXED);
}

static uint64_t alloc_total(void)
{
    uint64_t sum = 0;
    for (int i = 0; i < ALLOC_STRIPES; i++)
        sum += __atomic_load_n(&alloc_stripes[i].bytes, __ATOMIC_RELAXED);
    return sum;
}

/* Outputs. Every byte written is checked: a file that cannot take it (a full disk, /dev/full)
 * ends the program with exit 1, its path and the reason, never a "wrote". out_open tries the
 * file at once (a first byte flushed by out_check), so a long run does not end in a failed
 * write; a FIFO or a directory is refused (exit 2) before anything waits on it. */
static FILE *out_open(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISDIR(st.st_mode))) {
        fprintf(stderr, "aggregator: %s: is a %s, not a file to write\n", path,
                S_ISDIR(st.st_mode) ? "directory" : "FIFO");
        exit(2);
    }
    FILE *f = fopen(path, "w");
    if (!f)
        die("cannot write %s: %s", path, strerror(errno));
    return f;
}

/* Everything written to f so far has reached path, or exit 1 with the reason. */
static void out_check(FILE *f, const char *path)
{
    errno = 0;
    if (fflush(f) != 0 || ferror(f))
        die("cannot write %s: %s", path, strerror(errno ? errno : EIO));
}

/* out_check, then close f (the close's own failure counts too: NFS reports there). */
static void out_close(FILE *f, const char *path)
{
    out_check(f, path);
    if (fclose(f) != 0)
        die("cannot write %s: %s", path, strerror(errno));
}

/* A command's exit status once its report on stdout has been written: rc, or 1 if stdout
 * could not take it (stdout on a full disk or /dev/full). */
static int out_stdout(int rc)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    fprintf(stderr, "aggregator: cannot write standard output: %s\n",
            strerror(errno ? errno : EIO));
    return 1;
}

/* Out of memory is not a recoverable condition here: abort loudly (like smallchat). */
static void *xmalloc(size_t n)
{
    alloc_count(n);
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

static void *xcalloc(size_t n, size_t size)
{
    alloc_count(n * size);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        die("out of memory (%zu x %zu bytes)", n, size);
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    alloc_count(n);
    p = realloc(p, n ? n : 1);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

/* A growable byte buffer; len excludes the NUL that is always kept after the data. */
struct sbuf {
    char *p;    /* heap data, NUL-terminated, or NULL when empty and never grown */
    size_t len; /* bytes used */
    size_t cap; /* bytes allocated */
};

static void sbuf_reserve(struct sbuf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    b->p = xrealloc(b->p, cap);
    b->cap = cap;
}

static void sbuf_add(struct sbuf *b, const void *data, size_t n)
{
    sbuf_reserve(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sbuf_add_str(struct sbuf *b, const char *str)
{
    sbuf_add(b, str, strlen(str));
}

/* v in decimal, its digits ending at end; returns where they start (at most 20 digits).
 * The per-request paths format their few numbers so: vsnprintf parses its format at every
 * call, many times the work of the digits (callgrind found it in the response head). */
static char *fmt_ulong(char *end, unsigned long v)
{
    do
        *--end = (char)('0' + v % 10);
    while (v /= 10);
    return end;
}

static void sbuf_add_ulong(struct sbuf *b, unsigned long v)
{
    char d[24], *p = fmt_ulong(d + sizeof d, v);
    sbuf_add(b, p, (size_t)(d + sizeof d - p));
}

static void sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    sbuf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

static void sbuf_free(struct sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* The value of "Key:" in /proc/<pid>/status (kB for sizes, a count for Threads), or -1. */
static long proc_status_field(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, pid ? "/proc/%d/status" : "/proc/self/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

/* Resident set size of this process in bytes, from /proc/self/statm (cheaper than status). */
static long proc_rss_bytes(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = -1;
    fclose(f);
    return rss < 0 ? -1 : rss * sysconf(_SC_PAGESIZE);
}

/* Number of entries in a directory such as /proc/self/fd or /proc/self/task, minus "." and "..". */
static int proc_count_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* Whether a socket's ports match: one of them in [low, high] (peer < 0), or one of them the
 * peer's port and the other in [low, high] (a connection to that peer from a port of the
 * range, whichever side holds the socket). */
static int proc_ports_match(unsigned lp, unsigned rp, int peer, int low, int high)
{
    int l_in = lp >= (unsigned)low && lp <= (unsigned)high,
        r_in = rp >= (unsigned)low && rp <= (unsigned)high;
    if (peer < 0)
        return l_in || r_in;
    return (rp == (unsigned)peer && l_in) || (lp == (unsigned)peer && r_in);
}

/* TCP sockets in TIME_WAIT (state 06 in /proc/net/tcp and tcp6) whose ports match
 * (proc_ports_match). What --no-pool piles up, one per downstream call, for 60 s each: on the
 * aggregator's side when it closes first (the local port is the ephemeral one, the remote the
 * backend's), on the backend's when the backend does (the other way round). With peer = the
 * backend's port, the ephemeral ports so held, each once: a port is one connection to the
 * peer at a time, but both of its sides may hold a TIME_WAIT (one closed first, the next on
 * the same port the other way), and the walk is no snapshot (a socket that ends and another
 * that starts meanwhile can both be read), so counting sockets could pass the range's size;
 * counting ports cannot. peer < 0 counts sockets, the load generator's own as well. */
static long proc_count_time_wait_to(int peer, int low, int high)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    uint64_t *seen = peer >= 0 ? xcalloc(65536 / 64, sizeof *seen) : NULL;
    long n = 0;
    for (size_t i = 0; i < ARRAY_LEN(files); i++) {
        FILE *f = fopen(files[i], "r");
        if (!f) {
            n = i ? n : -1; /* no IPv6: the IPv4 count */
            break;
        }
        char line[512];
        unsigned lp, rp, state; /* local and remote port, hex in the file */
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "%*s %*[0-9A-F]:%x %*[0-9A-F]:%x %x", &lp, &rp, &state) == 3 &&
                state == 6 && proc_ports_match(lp, rp, peer, low, high)) {
                unsigned port = (lp == (unsigned)peer ? rp : lp) & 0xffff;
                n += !seen || !(seen[port / 64] >> (port % 64) & 1);
                if (seen)
                    seen[port / 64] |= 1ull << (port % 64);
            }
        fclose(f);
    }
    free(seen);
    return n;
}

/* TCP sockets in TIME_WAIT with a local or remote port in [low, high]; 0..65535: them all. */
static long proc_count_time_wait(int low, int high)
{
    return proc_count_time_wait_to(-1, low, high);
}

/* The ephemeral port range and tcp_tw_reuse of the calling thread's network namespace
 * (net.ipv4.ip_local_port_range, net.ipv4.tcp_tw_reuse); -1 for what cannot be read. */
struct net_ports {
    int low, high; /* connect() picks local ports in [low, high] */
    int tw_reuse;  /* 0 off, 1 on, 2 loopback only (Linux's default) */
};

static struct net_ports proc_net_ports(void)
{
    struct net_ports np = {-1, -1, -1};
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f && fscanf(f, "%d %d", &np.low, &np.high) != 2)
        np.low = np.high = -1;
    if (f)
        fclose(f);
    f = fopen("/proc/sys/net/ipv4/tcp_tw_reuse", "r");
    if (f && fscanf(f, "%d", &np.tw_reuse) != 1)
        np.tw_reuse = -1;
    if (f)
        fclose(f);
    return np;
}

/* Raise the soft fd limit to the hard limit: 5000 users need 10,000+ sockets. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* SIGINT and SIGTERM are blocked in every thread (main blocks them before creating any) and
 * taken synchronously with sigtimedwait: no handler, no async-signal-safety traps. */
static void signals_block(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Wait until the deadline (ns; -1 = forever) or a signal. Returns 1 if a signal came. */
static int signals_wait_until(int64_t deadline)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    for (;;) {
        int64_t left = deadline < 0 ? NS_PER_S : deadline - now_ns();
        if (left <= 0)
            return 0;
        struct timespec ts = {left / NS_PER_S, left % NS_PER_S};
        if (sigtimedwait(&set, NULL, &ts) > 0)
            return 1;
    }
}

/* Announcing a switch to the sanitizers. Every switch between a virtual thread and its
 * carrier's scheduler calls san_before_switch just before vt_ctx_switch and san_after_switch
 * just after it (back on the context that switched away). AddressSanitizer must know the
 * stack that runs next ([lo, lo + size)), keeps the leaving context's fake stack in *fake
 * (NULL: it never runs again), and on return tells where the previous stack was.
 * ThreadSanitizer must know which fiber runs next: each virtual thread is one, and so is each
 * carrier's scheduler loop; a switch with flags 0 also orders the two, as a lock would. Both
 * are empty in other builds, and always inlined: ASan wants them in the frame that switches.
 * Copied frames are unpoisoned by vt_stack_save and vt_stack_restore (ASAN_UNPOISON). */
#ifdef VT_ASAN
#define ASAN_UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define ASAN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#ifdef VT_TSAN
#define TSAN_CREATE()   __tsan_create_fiber(0)
#define TSAN_DESTROY(f) __tsan_destroy_fiber(f)
#define TSAN_CURRENT()  __tsan_get_current_fiber()
#define TSAN_SWITCH(f)  __tsan_switch_to_fiber((f), 0)
#else
#define TSAN_CREATE()   NULL
#define TSAN_DESTROY(f) ((void)(f))
#define TSAN_CURRENT()  NULL
#define TSAN_SWITCH(f)  ((void)(f))
#endif

/* Valgrind (make valgrind builds with VT_VALGRIND). Each run stack is registered: they lie
 * a few hundred KiB apart, closer than Memcheck's --max-stackframe, so without it a switch
 * between two of them would read as one huge frame pushed or popped and leave the frames
 * there unaddressable. Restoring frames writes below the stack pointer a run stack had when
 * it last ran, bytes Memcheck marked unaddressable as that thread's frames returned:
 * VG_WRITABLE makes them addressable (the copy then brings its own definedness). */
#ifdef VT_VALGRIND
#define VG_STACK_REGISTER(lo, hi) VALGRIND_STACK_REGISTER((lo), (hi))
#define VG_STACK_DEREGISTER(id)   VALGRIND_STACK_DEREGISTER(id)
#define VG_WRITABLE(p, n)         VALGRIND_MAKE_MEM_UNDEFINED((p), (n))
#else
#define VG_STACK_REGISTER(lo, hi) ((void)(lo), (void)(hi), 0u)
#define VG_STACK_DEREGISTER(id)   ((void)(id))
#define VG_WRITABLE(p, n)         ((void)(p), (void)(n))
#endif

static inline __attribute__((always_inline)) void san_before_switch(void **fake, const void *lo,
                                                                    size_t size, void *tsan_fiber)
{
#ifdef VT_ASAN
    __sanitizer_start_switch_fiber(fake, lo, size);
#else
    (void)fake;
    (void)lo;
    (void)size;
#endif
#ifdef VT_TSAN
    __tsan_switch_to_fiber(tsan_fiber, 0);
#else
    (void)tsan_fiber;
#endif
}

static inline __attribute__((always_inline)) void san_after_switch(void *fake, const void **from_lo,
                                                                   size_t *from_size)
{
#ifdef VT_ASAN
    __sanitizer_finish_switch_fiber(fake, from_lo, from_size);
#else
    (void)fake;
    (void)from_lo;
    (void)from_size;
#endif
}

/* Counters written only by the calling carrier and read by /metrics from anywhere: relaxed
 * atomic loads and stores (plain moves on x86-64 and aarch64), never a locked add. */
#define OWN_ADD(x, n)                                                                              \
    __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define SHARED_ADD(x, n) __atomic_fetch_add(&(x), (n), __ATOMIC_RELAXED)
#define LOAD(x)          __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* A small spinlock for the run queues and the park locks: held for a few instructions, so a
 * futex would cost more than it saves; it yields the CPU if the holder was preempted. */
__attribute__((noinline)) static void spin_lock_slow(int *l)
{
    for (int n = 0; __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE); n++)
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++n > 100)
                sched_yield();
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        }
}

static inline void spin_lock(int *l)
{
    if (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        spin_lock_slow(l);
}

static void spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* The portable context switch, for targets without I.2's assembly (build with
 * -DVT_UCONTEXT to try it here): slow, since swapcontext makes a sigprocmask syscall. */
#if VT_SWITCH_UCONTEXT
#define VT_FRAME_BYTES 0
struct vt_ctx {
    void *sp;      /* lowest live stack address while switched out (approximate, low) */
    ucontext_t uc; /* the registers */
    int fresh;     /* 1 until the first switch: makecontext is done lazily, see below */
    void (*boot)(void *);
    void *arg;
};

static void vt_ucontext_entry(unsigned hi, unsigned lo)
{
    struct vt_ctx *ctx = (struct vt_ctx *)(uintptr_t)(((uint64_t)hi << 32) | lo);
    ctx->boot(ctx->arg);
    abort();
}

/* The context is created on first use because makecontext writes a frame into the run stack,
 * which may still hold another thread's frames until the scheduler has saved them. */
static void vt_ctx_switch(struct vt_ctx *from, struct vt_ctx *to)
{
    /* swapcontext's own frame lies below ours: keep a 512-byte margin in the copy */
    from->sp = (char *)__builtin_frame_address(0) - 512;
    if (to->fresh) {
        uint64_t p = (uint64_t)(uintptr_t)to;
        to->fresh = 0;
        getcontext(&to->uc);
        to->uc.uc_link = NULL;
        to->uc.uc_stack.ss_sp = (char *)to->sp - 65536; /* only the top is ever used at once */
        to->uc.uc_stack.ss_size = 65536;
        makecontext(&to->uc, (void (*)(void))vt_ucontext_entry, 2, (unsigned)(p >> 32),
                    (unsigned)p);
    }
    swapcontext(&from->uc, &to->uc);
}

static void vt_frame_init(struct vt_ctx *ctx, char *top, void (*boot)(void *), void *arg)
{
    ctx->sp = top;
    ctx->fresh = 1;
    ctx->boot = boot;
    ctx->arg = arg;
}
#endif

/* ~~~~ The lesson begins: the mechanism of a virtual thread, I.2 to I.8 ~~~~ */

/* ---- I.2 Context switch ---- */

/* vt_switch_asm(&from_sp, to_sp) saves the callee-saved registers of the running context on
 * its own stack, stores the stack pointer in *from_sp, loads to_sp and restores the registers
 * found there. Everything else is caller-saved by the C ABI, so it is already on the stack or
 * dead. Nothing is touched below the stack pointer (no red-zone use), so a signal is always
 * safe. The FP control state (x87 control word, MXCSR; FPCR on aarch64) is not switched: the
 * virtual threads of a carrier share it, as libaco does by default (its
 * ACO_CONFIG_SHARE_FPU_MXCSR_ENV) and libdill always does. Invariant: no virtual thread changes
 * the rounding mode or the exception masks (nothing in this program calls fesetround); one
 * that must, restores them before it parks. Switching them (ldmxcsr, fldcw) would cost a
 * large share of a switch.
 *
 * x86-64 frame, from to_sp upwards (48 bytes, then the return address):
 *     +0  r15   +8  r14   +16 r13   +24 r12   +32 rbx   +40 rbp   +48 return address
 * aarch64 frame (160 bytes): x19..x28, x29 (fp), x30 (lr, the return address), d8..d15.
 *
 * A new thread's frame is built by vt_frame_init so that the first switch "returns" into
 * vt_boot_asm, which jumps to boot(vt) with both taken from callee-saved registers, with the
 * address of a trap instruction as boot's return address: boot never returns, and if it did
 * the trap would stop the process loudly. A jump, not a call: a call would push a return
 * address on the CPU's return-stack predictor that no ret ever pops, and the joiner's next
 * ret after the thread switched back would be predicted from it and mispredict (the rets of
 * the two switches mispredict anyway: each returns into another context).
 * Other targets switch with ucontext (I.1 has it; build with -DVT_UCONTEXT to try it here). */
#if VT_SWITCH_X86_64
/* A new frame: 48 bytes of registers, the return address, then 16 bytes of padding, so
 * that after `ret` the stack pointer is 16-byte aligned, and after vt_boot_asm's push boot
 * starts with it 8 off, as after a call. */
#define VT_FRAME_BYTES 72
__asm__(".text\n"
        ".type vt_switch_asm,@function\n"
        "vt_switch_asm:\n"
        "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n"
        "    pushq %r13\n    pushq %r14\n    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n    popq %r14\n    popq %r13\n"
        "    popq %r12\n    popq %rbx\n    popq %rbp\n"
        "    ret\n"
        ".size vt_switch_asm, .-vt_switch_asm\n"
        ".type vt_boot_asm,@function\n"
        "vt_boot_asm:\n"
        "    movq %r12, %rdi\n"
        "    leaq 1f(%rip), %rax\n"
        "    pushq %rax\n"
        "    jmpq *%r13\n"
        "1:  ud2\n"
        ".size vt_boot_asm, .-vt_boot_asm\n");
#elif VT_SWITCH_AARCH64
#define VT_FRAME_BYTES 176 /* 160-byte register frame + 16 bytes so the boot call has room */
__asm__(".text\n"
        ".type vt_switch_asm,%function\n"
        "vt_switch_asm:\n"
        "    sub sp, sp, #160\n"
        "    stp x19, x20, [sp, #0]\n    stp x21, x22, [sp, #16]\n"
        "    stp x23, x24, [sp, #32]\n    stp x25, x26, [sp, #48]\n"
        "    stp x27, x28, [sp, #64]\n    stp x29, x30, [sp, #80]\n"
        "    stp d8, d9, [sp, #96]\n    stp d10, d11, [sp, #112]\n"
        "    stp d12, d13, [sp, #128]\n    stp d14, d15, [sp, #144]\n"
        "    mov x2, sp\n    str x2, [x0]\n"
        "    mov sp, x1\n"
        "    ldp x19, x20, [sp, #0]\n    ldp x21, x22, [sp, #16]\n"
        "    ldp x23, x24, [sp, #32]\n    ldp x25, x26, [sp, #48]\n"
        "    ldp x27, x28, [sp, #64]\n    ldp x29, x30, [sp, #80]\n"
        "    ldp d8, d9, [sp, #96]\n    ldp d10, d11, [sp, #112]\n"
        "    ldp d12, d13, [sp, #128]\n    ldp d14, d15, [sp, #144]\n"
        "    add sp, sp, #160\n"
        "    ret\n"
        ".size vt_switch_asm, .-vt_switch_asm\n"
        ".type vt_boot_asm,%function\n"
        "vt_boot_asm:\n"
        "    mov x0, x19\n"
        "    adr x30, 1f\n"
        "    mov x16, x20\n" /* a BR through x16: BTI's `bti c` landing pads accept it */
        "    br x16\n"
        "1:  brk #0\n"
        ".size vt_boot_asm, .-vt_boot_asm\n");
#endif

#if VT_SWITCH_X86_64 || VT_SWITCH_AARCH64
/* Defined in the assembly above, local to this file (no .globl), hence hidden. */
__attribute__((visibility("hidden"))) void vt_switch_asm(void **from_sp, void *to_sp);
__attribute__((visibility("hidden"))) void vt_boot_asm(void);

/* A saved context is its stack pointer: the registers live in the frame it points to. */
struct vt_ctx {
    void *sp;
};

/* Always inlined: TSan would record a call here on one fiber and its return on another. */
static inline __attribute__((always_inline)) void vt_ctx_switch(struct vt_ctx *from,
                                                                struct vt_ctx *to)
{
    vt_switch_asm(&from->sp, to->sp);
}

/* Build the first frame of a new thread in the top VT_FRAME_BYTES of a stack image whose
 * top is `top` (16-byte aligned), so that switching to it calls boot(arg). */
static void vt_frame_init(struct vt_ctx *ctx, char *top, void (*boot)(void *), void *arg)
{
    uint64_t *f = (uint64_t *)(void *)(top - VT_FRAME_BYTES);
#if VT_SWITCH_X86_64
    /* r15, r14 and rbx (f[0], f[1], f[4]) start with whatever the stack holds: boot is the
     * first function of the thread and its callee-saved registers are its own */
    f[2] = (uint64_t)(uintptr_t)boot;        /* r13 */
    f[3] = (uint64_t)(uintptr_t)arg;         /* r12 */
    f[5] = 0;                                /* rbp: ends frame-pointer backtraces */
    f[6] = (uint64_t)(uintptr_t)vt_boot_asm; /* return address; f[7], f[8] pad to 16 */
#else
    memset(f, 0, VT_FRAME_BYTES);
    f[0] = (uint64_t)(uintptr_t)arg;          /* x19 */
    f[1] = (uint64_t)(uintptr_t)boot;         /* x20 */
    f[11] = (uint64_t)(uintptr_t)vt_boot_asm; /* x30 */
#endif
    ctx->sp = f;
}
#endif

/* ---- I.3 Virtual threads ---- */

/* The stack design, and why. 100,000 parked virtual threads must fit in one process where
 * vm.max_map_count is 65530, so one mmap plus a guard page per stack cannot work (each guard
 * page splits a mapping: about 32,700 stacks at most). We copy stacks, as Loom does with its
 * heap stack chunks and libaco with its shared stacks:
 *   - the runtime owns a few run stacks (VT_STACKS per carrier, 256 KiB each, one mmap) with
 *     a 64 KiB PROT_NONE guard region below each: a fixed number of mappings, whatever the
 *     number of virtual threads;
 *   - every virtual thread is given one run stack at spawn and always runs on it; when another
 *     thread of the same run stack needs it, the frames in use (from the saved stack pointer
 *     to the top, usually a few hundred bytes) are copied to a heap buffer owned by the parked
 *     thread, and copied back before it runs again. The copy is lazy: a thread whose frames
 *     are still on its run stack is not copied at all;
 *   - so a parked virtual thread costs its struct plus the bytes it really used (measured
 *     by `./aggregator microbench`), and an overflow hits the guard region and faults; the
 *     SIGSEGV handler (on an alternate signal stack) recognises the address and prints
 *     "virtual thread stack overflow" before aborting: detected, never silent.
 *   Saved frames hold absolute addresses inside their run stack, so a thread can only run on
 *   that stack, but any carrier may run it there: a run stack is held (vt_stack.busy) by the
 *   one carrier running a thread on it (or, while a joiner's child runs right after it, by
 *   that carrier: fast_keep_joiner), and a carrier that finds it held hands the thread to
 *   the holder. That is what lets virtual threads migrate between carriers (work stealing,
 *   I.5). No pointer to a virtual thread's stack may be handed to another virtual thread,
 *   since those bytes move while it is parked: everything shared (join records, fan-out
 *   results, connections) lives on the heap. */

/* Sizes. A virtual thread may use up to 256 KiB of stack while running, and pays only for
 * what is in use when it parks. The guard region is large so that one big frame cannot jump
 * over it. VT_STACKS run stacks per carrier: a thread spawned on a carrier gets one of that
 * carrier's, round-robin, so two carriers rarely want the same stack at once. */
#define VT_RUN_STACK (256 * 1024)
#define VT_GUARD     (64 * 1024)
#define VT_STACKS    4
#define VT_ALTSTACK  (64 * 1024) /* per-carrier signal stack for the overflow message */

/* Loom's states (java.lang.VirtualThread), reduced: NEW and STARTED are VT_RUNNABLE before
 * the first run; PINNED is a VT_RUNNING thread blocked in the kernel (see vt_pin). A thread
 * sets PARKING, JOINING, YIELDING or EXITING itself and switches away; its carrier then
 * finishes the transition (Loom's afterYield), so no other carrier can see it runnable
 * before its registers are saved. */
enum vt_state {
    VT_RUNNABLE, /* in a run queue */
    VT_RUNNING,  /* on a carrier now */
    VT_PARKING,  /* switching away to park */
    VT_PARKED,   /* waiting for an fd or a timer (or anything vt_unpark ends) */
    VT_JOINING,  /* switching away to wait in vt_join */
    VT_JOINED,   /* waiting in vt_join: only its child's exit wakes it (vt_unpark cannot) */
    VT_YIELDING, /* switching away to be queued again */
    VT_EXITING,  /* its function returned; switching away for good */
    VT_DONE,     /* the struct waits for vt_join (or went back to a cache) */
};

enum { VT_READ = 0, VT_WRITE = 1 };                          /* which waiter slot of an fd */
enum { VT_JOINABLE = 0, VT_DETACHED = 1 };                   /* vt_spawn: who frees it */
enum { VT_WOKE_EVENT = 0, VT_WOKE_TIMEOUT, VT_WOKE_CANCEL }; /* why a park ended */
#define VT_JOIN_DONE ((struct vt *)1)                        /* vt.join_word once done */

struct carrier;
struct vt_stack;
struct vt;

/* An entry of a carrier's timer heap (I.4). */
struct timer_ent {
    int64_t deadline; /* ns */
    struct vt *v;
};

struct vt {
    struct vt_ctx ctx;       /* saved stack pointer; registers are in the frame it points to */
    char *saved;             /* heap copy of the frames in use, valid while not on the stack */
    size_t saved_len;        /* bytes of that copy: run-stack top minus saved stack pointer */
    size_t saved_cap;        /* bytes allocated for it */
    struct vt_stack *stk;    /* the run stack this thread always runs on (frames can't move) */
    struct carrier *carrier; /* the carrier it runs or last ran on */
    struct vt *next;         /* link in a run queue or a descriptor cache */
    void (*fn)(void *);      /* entry function and its argument, dead once it has started */
    union {
        void *arg;
        struct vt *joining; /* in vt_join: the child it waits for (arg is dead by then) */
    };
    int state;              /* enum vt_state; atomic */
    int permit;             /* Loom's parkPermit: an unpark that came before the park; atomic */
    struct carrier *wait_c; /* carrier whose plock guards this park's fd slot and timer */
    int heap_idx;           /* index in wait_c's timer heap, or -1 (guarded by its plock) */
    int wait_fd;            /* fd whose waiter slot holds this thread, or -1 */
    int wait_dir;           /* VT_READ or VT_WRITE for wait_fd */
    int woke;               /* VT_WOKE_*: why the last park ended (set by the waker) */
    int detached;           /* VT_DETACHED: freed when done; VT_JOINABLE: freed by vt_join */
    int pinned;             /* > 0 while inside vt_pin: blocking calls hold the carrier */
    struct vt *join_word;   /* atomic: NULL, the thread waiting in vt_join, or VT_JOIN_DONE */
    void *asan_fake;        /* ASan's fake-stack handle across a switch (unused otherwise) */
    void *tsan_fiber;       /* TSan's fiber for this thread (NULL otherwise) */
};

/* A run stack. owner is touched only by the carrier holding busy. */
struct vt_stack {
    char *map;              /* the mapping: guard region, then the run stack */
    char *lo, *hi;          /* usable run stack [lo, hi); frames grow down */
    unsigned vg_id;         /* its id for Valgrind (VG_STACK_REGISTER), or 0 */
    struct vt *owner;       /* thread whose frames occupy it, or NULL */
    int busy;               /* atomic: 1 while a carrier runs a thread on it */
    struct carrier *holder; /* atomic: that carrier, a hint for handing threads over */
};

/* Per-fd readiness, indexed by fd number, per direction (read, write). Like Go's pollDesc:
 * the fd is registered once, edge-triggered, and `ready` says whether a call may succeed. An
 * epoll event sets it; proof that the fd is drained clears it: a call that saw EAGAIN, or a
 * short read or write (a stream returns less than asked only when it has no more), unless an
 * edge came after the call began (`edges` moved: read before the call, compared when
 * clearing) or, for a short call, an event said the peer closed (`final`: a FIN that came
 * with the last data has no edge of its own, and the read after it returns 0). A thread
 * that finds `ready` clear parks at once, without the call that would only see EAGAIN
 * (io_rw). Guarded by the owner's plock, so a thread on any carrier may wait on the fd;
 * `ready` and `edges` are also read unlocked (atomics). */
struct vt_io {
    struct carrier *owner;  /* carrier whose epoll watches this fd, or NULL; atomic */
    struct vt *waiter[2];   /* thread parked for reading / writing, or NULL */
    unsigned edges[2];      /* events seen so far, a generation; atomic */
    unsigned char ready[2]; /* a call may succeed: not proved drained since the last event */
    unsigned char final[2]; /* an event reported HUP, RDHUP or ERR: short calls prove nothing */
};

/* A carrier: one pthread, one epoll, one run queue, one timer heap. The run queue is shared
 * with thieves (qlock); the timer heap and the waiter slots of the fds registered with its
 * epoll are shared with threads parking from any carrier (plock). */
struct carrier {
    int id; /* index in rt.carriers */
    pthread_t thread;
    int epfd;             /* epoll: registered fds and the wake eventfd */
    int wakefd;           /* eventfd written to wake the carrier from epoll_wait */
    struct vt *cur;       /* thread running now, or NULL in the scheduler */
    struct vt *front;     /* atomic: the fast paths' front slot, or NULL (I.9, layer 1) */
    int qlock;            /* guards runq_head, runq_tail */
    struct vt *runq_head; /* FIFO of runnable threads behind the front, see I.5 */
    struct vt *runq_tail;
    long qlen;              /* threads in that list; written under qlock, read anywhere */
    int sleeping;           /* atomic: 1 while in (or about to enter) a blocking epoll_wait */
    int plock;              /* guards heap, heap_len, heap_cap and its fds' vt_io slots */
    struct timer_ent *heap; /* timer min-heap ordered by deadline */
    int heap_len, heap_cap;
    unsigned next_stk;            /* round-robin over this carrier's run stacks (a hint) */
    struct vt *cache;             /* freed thread descriptors, for the next spawns (own use) */
    struct vt_stack *release_stk; /* run stack of a thread that exited, released by the next
                                     context (vt_resumed) */
    struct vt *prev;              /* I.9, layer 2: thread that switched straight to the running
                                     one, its transition finished by the next context */
    struct vt_stack *kept_stk;    /* I.9, layer 3: a joiner's run stack, held while its child
                                     runs here (fast_keep_joiner) */
    struct vt_ctx dead_ctx;       /* where an exiting thread's registers go (never resumed) */
    struct vt_ctx sched_ctx;      /* the scheduler loop's context, on the pthread's stack */
    void *altstack;               /* alternate signal stack for the overflow handler */
    int cancelled_all;            /* shutdown seen: every parked thread was woken */
    unsigned unpolled_runs;       /* I.9, layers 2 and 4: runs since the last look at I/O */
    int64_t polled_at;            /* ns: the last epoll_wait, blocking or not */
    unsigned steal_from;          /* next victim to try */
    unsigned idle_looks;          /* passes in a row that found nothing to run or steal */
    /* counters (OWN_ADD by the carrier that is carrier_self) */
    uint64_t runs;             /* switches into a virtual thread: how work spread */
    uint64_t steals;           /* threads taken from another carrier's queue */
    uint64_t copied_bytes;     /* stack bytes saved plus restored */
    uint64_t spawned;          /* threads this carrier created (release stores) */
    uint64_t finished;         /* threads that finished here (release stores) */
    long parked;               /* parks minus unparks done by this carrier (summed: parked) */
    int busy;                  /* 1 while running a virtual thread */
    void *asan_fake;           /* ASan bookkeeping for the scheduler's own stack */
    void *tsan_sched;          /* TSan's fiber for the scheduler loop (NULL otherwise) */
    const void *asan_sched_lo; /* ASan: the scheduler's stack, learnt at the first switch */
    size_t asan_sched_size;
};

/* The one runtime context. Its fields are set by rt_start and rt_join; in between only the
 * flags and the counters change (atomically). */
static struct rt {
    int ncarriers;
    struct carrier *carriers;
    struct vt_stack *stacks; /* ncarriers * VT_STACKS run stacks */
    struct vt_io *io;        /* indexed by fd, io_cap entries */
    int io_cap;
    int shutdown;               /* atomic: parks fail with ECANCELED, carriers exit when idle */
    unsigned next_carrier;      /* atomic: round-robin placement of new threads */
    int nsleeping;              /* atomic: carriers with sleeping set */
    long parked;                /* atomic: unparks done by threads that are not carriers */
    long pinned;                /* atomic: threads inside vt_pin now */
    long pinned_blocked;        /* atomic: pinned threads blocked in the kernel right now */
    uint64_t spawned, finished; /* atomic: virtual threads created / whose function returned,
                                   by other threads than carriers (and folded in by rt_join) */
    struct sigaction old_segv;  /* restored for faults that are not stack overflows */
    int no_pwait2;              /* atomic: the kernel said ENOSYS to epoll_pwait2 once */
    int fast_off;               /* the I.9 layers turned off (FAST_* bits), only while stopped */
} rt;

/* The carrier that the calling OS thread is, or NULL (main thread, platform pool threads). */
static __thread struct carrier *carrier_self;

static struct vt *vt_current(void)
{
    return carrier_self ? carrier_self->cur : NULL;
}

/* The seam. The fast paths of I.9 enter the mechanism through these calls and nowhere else.
 * The second column is each call's simple form: what the simple build (-DVT_SIMPLE, make
 * test-simple) compiles, and what a layer turned off in rt.fast_off does (microbench).
 *   fast_push(c, v)           0     layer 1: c's owner queues v in the front slot (1)
 *   fast_take(c, thief)       NULL  layer 1: the front slot's thread, for c or a thief
 *   fast_len(c)               0     layer 1: threads in the front slot (0 or 1)
 *   fast_switch(c, v)         0     layer 2: v leaves straight to the next thread (1)
 *   fast_exit_next(c, s, j)   NULL  layer 2: the thread an exit switches straight to
 *   fast_resumed(c)           -     layers 2, 3: what a straight switch left to do
 *   fast_keep_joiner(c, s, v) 0     layer 3: a joiner keeps its stack while its child runs
 *   fast_poll_due(c, ran)     1     layer 4: poll I/O after this batch (simple: every one) */
enum { FAST_FRONT = 1, FAST_DIRECT = 2, FAST_KEPT = 4, FAST_POLL = 8, FAST_ALL = 15 };
static inline int fast_push(struct carrier *c, struct vt *v);
static inline struct vt *fast_take(struct carrier *c, int thief);
static inline long fast_len(struct carrier *c);
static inline __attribute__((always_inline)) int fast_switch(struct carrier *c, struct vt *v);
static struct vt *fast_exit_next(struct carrier *c, struct vt_stack *s, struct vt *j);
static inline void fast_resumed(struct carrier *c);
static int fast_keep_joiner(struct carrier *c, struct vt_stack *s, struct vt *v);
static inline int fast_poll_due(struct carrier *c, long ran);
/* ---- I.4 Timer heap ---- */

/* The deadlines (ns) of the timed parks guarded by a carrier's plock, a binary min-heap:
 * O(log n) insert and remove. Every function here runs with c->plock held. The deadline
 * sits in the entry, beside the thread: a sift compares without touching the threads (with
 * many parked, each was a cache miss, and the sift showed in the server's profile), and
 * moves entries into a hole instead of swapping them. */
static void timer_place(struct carrier *c, int i, struct timer_ent e)
{
    c->heap[i] = e;
    e.v->heap_idx = i;
}

/* Fill hole i with e, moving e up or down to where it belongs. */
static void timer_sift(struct carrier *c, int i, struct timer_ent e)
{
    while (i > 0 && c->heap[(i - 1) / 2].deadline > e.deadline) {
        timer_place(c, i, c->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (int m; (m = 2 * i + 1) < c->heap_len; i = m) {
        if (m + 1 < c->heap_len && c->heap[m + 1].deadline < c->heap[m].deadline)
            m++;
        if (c->heap[m].deadline >= e.deadline)
            break;
        timer_place(c, i, c->heap[m]);
    }
    timer_place(c, i, e);
}

static void timer_add(struct carrier *c, struct vt *v, int64_t deadline)
{
    if (c->heap_len == c->heap_cap) {
        c->heap_cap = c->heap_cap ? 2 * c->heap_cap : 64;
        c->heap = xrealloc(c->heap, (size_t)c->heap_cap * sizeof *c->heap);
    }
    __atomic_store_n(&c->heap_len, c->heap_len + 1, __ATOMIC_RELAXED); /* peeked unlocked */
    timer_sift(c, c->heap_len - 1, (struct timer_ent){deadline, v});
}

static void timer_remove(struct carrier *c, struct vt *v)
{
    int i = v->heap_idx;
    v->heap_idx = -1;
    __atomic_store_n(&c->heap_len, c->heap_len - 1, __ATOMIC_RELAXED);
    if (i != c->heap_len)
        timer_sift(c, i, c->heap[c->heap_len]);
}

/* ---- I.5 Run queue ---- */

/* Work stealing as in Loom's scheduler, a ForkJoinPool created with asyncMode = true. Each
 * carrier has a FIFO run queue; the owner takes from its head, the oldest thread (FJP's
 * nextLocalTask in FIFO mode polls at `base`), and a carrier that runs dry steals from the
 * head of another carrier's queue before it sleeps in epoll. Thieves do not take the other
 * end, as a Chase-Lev deque's would: in OpenJDK's ForkJoinPool thieves also poll at `base`
 * (scan / pollScan take the slot at base and advance it), the same end as an asyncMode
 * owner: every thread is taken oldest first by whoever takes it, so a thread's wait in the
 * queues stays FIFO-fair, which is what keeps the p99 low. (LIFO owners with FIFO thieves
 * suit fork/join, not event tasks.)
 * The queue is a linked list under a spinlock (qlock): its owner pushes at the tail and
 * takes the head, and so do thieves (runq_steal). Through the seam, I.9's first layer puts
 * a slot before the list that its owner fills without the lock (fast_push, fast_take).
 *
 * Wake-ups, and why none is lost: a carrier about to sleep sets `sleeping`, then (after a
 * full fence) looks at its own queue and every other queue once more (not the others' when
 * its last steal failed: carrier_sleep's `again`); whoever pushes does the push, a full
 * fence, then looks at `sleeping` (carrier_signal, vt_enqueue). Of two such sequences
 * at least one sees the other's store (the Dekker pattern), so either the sleeper finds the
 * work or the pusher writes its eventfd. Like FJP's signalWork, a push also wakes a sleeping
 * carrier when the target is busy or already has work queued, so the work becomes someone's
 * to steal instead of waiting behind a long-running thread. */

/* Threads queued on c, in the list and in the seam's front slot (a racy snapshot). */
static inline long runq_len(struct carrier *c)
{
    return LOAD(c->qlen) + fast_len(c);
}

/* The queue's two list operations, with c->qlock held; qlen is the callers' to keep. */
static void runq_append_locked(struct carrier *c, struct vt *v)
{
    v->next = NULL;
    if (c->runq_tail)
        c->runq_tail->next = v;
    else
        c->runq_head = v;
    c->runq_tail = v;
}

/* Unlink the head, which must exist. */
static struct vt *runq_shift_locked(struct carrier *c)
{
    struct vt *v = c->runq_head;
    c->runq_head = v->next;
    if (!c->runq_head)
        c->runq_tail = NULL;
    return v;
}

static void runq_push(struct carrier *c, struct vt *v)
{
    spin_lock(&c->qlock);
    runq_append_locked(c, v);
    __atomic_store_n(&c->qlen, c->qlen + 1, __ATOMIC_RELAXED);
    spin_unlock(&c->qlock);
}

/* The oldest thread of c's queue, taken by its owner, or NULL. */
static struct vt *runq_pop(struct carrier *c)
{
    struct vt *v = fast_take(c, 0); /* the seam's front slot holds the oldest */
    if (v || !__atomic_load_n(&c->qlen, __ATOMIC_RELAXED))
        return v;
    spin_lock(&c->qlock);
    v = c->runq_head ? runq_shift_locked(c) : NULL;
    if (v)
        __atomic_store_n(&c->qlen, c->qlen - 1, __ATOMIC_RELAXED);
    spin_unlock(&c->qlock);
    return v;
}

/* A thief's take from c's queue: the oldest of its first few threads whose run stack no
 * carrier holds now (one that is held could only be handed back to its holder), or NULL. */
static struct vt *runq_steal(struct carrier *c)
{
    struct vt *f = fast_take(c, 1);
    if (f || !__atomic_load_n(&c->qlen, __ATOMIC_RELAXED))
        return f;
    spin_lock(&c->qlock);
    struct vt **link = &c->runq_head, *prev = NULL;
    for (int i = 0; *link && i < 8; i++, prev = *link, link = &(*link)->next) {
        struct vt *v = *link;
        if (__atomic_load_n(&v->stk->busy, __ATOMIC_RELAXED))
            continue;
        *link = v->next;
        if (c->runq_tail == v)
            c->runq_tail = prev;
        __atomic_store_n(&c->qlen, c->qlen - 1, __ATOMIC_RELAXED);
        spin_unlock(&c->qlock);
        return v;
    }
    spin_unlock(&c->qlock);
    return NULL;
}

/* Wake carrier c from epoll_wait if it is sleeping there (or about to). */
static void carrier_wake(struct carrier *c)
{
    if (!__atomic_load_n(&c->sleeping, __ATOMIC_SEQ_CST) ||
        !__atomic_exchange_n(&c->sleeping, 0, __ATOMIC_SEQ_CST))
        return;
    SHARED_ADD(rt.nsleeping, -1);
    uint64_t one = 1;
    if (write(c->wakefd, &one, sizeof one) < 0 && errno != EAGAIN)
        die("eventfd write: %s", strerror(errno));
}

/* After work was pushed to c: wake c if it sleeps; if c is busy running a thread or has a
 * backlog of VT_STEAL_BACKLOG queued, wake one sleeping carrier to steal (FJP's signalWork).
 * Not for every second thread queued: a wake-up costs the two carriers CPU (eventfd,
 * epoll_wait, a futile steal when the owner got there first). */
#define VT_STEAL_BACKLOG 4
static void carrier_signal(struct carrier *c)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&c->sleeping, __ATOMIC_RELAXED)) {
        carrier_wake(c);
        return;
    }
    if (!LOAD(rt.nsleeping) || (runq_len(c) < VT_STEAL_BACKLOG && !LOAD(c->busy)))
        return;
    for (int i = 0; i < rt.ncarriers; i++)
        if (&rt.carriers[i] != c && LOAD(rt.carriers[i].sleeping)) {
            carrier_wake(&rt.carriers[i]);
            return;
        }
}

/* Queue v (now VT_RUNNABLE) on the calling carrier, the one that saw its event, or, from
 * another OS thread, on the carrier it last ran on; then signal as above. A push made by a
 * running thread (a spawn, an unpark) must be seen by a carrier going to sleep, or it waits
 * behind the running thread however long that runs: so the push, a full fence, then the
 * look at nsleeping, the pusher's half of the protocol above (without the fence, x86's store
 * buffer lets the sleeper miss our push while we miss its nsleeping). From the scheduler
 * loop (c->cur NULL) the carrier runs the thread itself next, so no fence is needed there,
 * and a signal only for a backlog. */
static void vt_enqueue(struct vt *v)
{
    struct carrier *c = carrier_self;
    if (!c) {
        runq_push(v->carrier, v);
        carrier_signal(v->carrier);
        return;
    }
    if (!fast_push(c, v))
        runq_push(c, v);
    if (c->cur)
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (LOAD(rt.nsleeping) && (runq_len(c) >= VT_STEAL_BACKLOG || c->cur))
        carrier_signal(c);
}

/* Add n to the parked count of the calling carrier (or the runtime's, from other threads). */
static inline void vt_count_parked(long n)
{
    if (carrier_self)
        OWN_ADD(carrier_self->parked, n);
    else
        SHARED_ADD(rt.parked, n);
}

/* Loom's unpark: give v its permit; if it was already parked, make it runnable (claim it:
 * returns 1 if this call did). A thread that is still switching away (PARKING) sees the
 * permit when its carrier finishes the park (carrier_after_run), so the two never miss each
 * other (both sides fence, Dekker again); one already PARKED is claimed by a CAS alone.
 * Descriptors are never returned to malloc while the runtime runs (vt_free caches them), so
 * a late unpark touches a live struct; at worst it wakes a park early, and every park's
 * caller loops. */
static int vt_unpark_claim(struct vt *v)
{
    int s = VT_PARKED;
    /* already parked (the usual case): one CAS, no permit needed */
    if (__atomic_load_n(&v->state, __ATOMIC_RELAXED) == VT_PARKED &&
        __atomic_compare_exchange_n(&v->state, &s, VT_RUNNABLE, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED))
        return 1;
    if (__atomic_exchange_n(&v->permit, 1, __ATOMIC_SEQ_CST))
        return 0;
    s = VT_PARKED;
    return __atomic_load_n(&v->state, __ATOMIC_SEQ_CST) == VT_PARKED &&
           __atomic_compare_exchange_n(&v->state, &s, VT_RUNNABLE, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_RELAXED);
}

static void vt_unpark(struct vt *v)
{
    if (vt_unpark_claim(v)) {
        vt_count_parked(-1);
        vt_enqueue(v);
    }
}

/* End a park's registration: forget the timer and the fd slot and record why. Runs with
 * v->wait_c's plock held (v is registered there); the caller then unparks v. */
static void vt_unregister_locked(struct vt *v, int why)
{
    if (v->heap_idx >= 0)
        timer_remove(v->wait_c, v);
    if (v->wait_fd >= 0) {
        rt.io[v->wait_fd].waiter[v->wait_dir] = NULL;
        v->wait_fd = -1;
    }
    v->woke = why;
    __atomic_store_n(&v->wait_c, NULL, __ATOMIC_RELEASE); /* vt_wait reads it after the park */
}

static void vt_wake_locked(struct vt *v, int why)
{
    vt_unregister_locked(v, why);
    vt_unpark(v);
}

/* Wake a thread parked with vt_park and no fd or timer (tests, the microbench). */
static void vt_wake(struct vt *v, int why)
{
    v->woke = why;
    vt_unpark(v);
}

/* ---- I.6 Copied stacks ---- */

/* Copy the frames of a run stack's owner to its heap buffer. Runs on the scheduler's stack,
 * never on the run stack it copies, by the carrier holding that stack. */
static void vt_stack_save(struct carrier *c, struct vt_stack *s, struct vt *v)
{
    char *sp = v->ctx.sp < (void *)s->lo ? s->lo : (char *)v->ctx.sp;
    size_t n = (size_t)(s->hi - sp);
    if (n > v->saved_cap) {
        v->saved_cap = (n + 255) & ~(size_t)255;
        v->saved = xrealloc(v->saved, v->saved_cap);
    }
    ASAN_UNPOISON(sp, n); /* frames keep their redzones poisoned; the copy must read them */
    memcpy(v->saved, sp, n);
    v->saved_len = n;
    OWN_ADD(c->copied_bytes, n);
}

static void vt_stack_restore(struct carrier *c, struct vt_stack *s, struct vt *v)
{
    if (!v->saved_len)
        return;
    ASAN_UNPOISON(s->hi - v->saved_len, v->saved_len);
    VG_WRITABLE(s->hi - v->saved_len, v->saved_len);
    memcpy(s->hi - v->saved_len, v->saved, v->saved_len);
    OWN_ADD(c->copied_bytes, v->saved_len);
}

/* Take run stack s for carrier c, or return 0 if another carrier runs a thread on it. */
static int vt_stack_acquire(struct vt_stack *s, struct carrier *c)
{
    if (__atomic_exchange_n(&s->busy, 1, __ATOMIC_ACQUIRE))
        return 0;
    __atomic_store_n(&s->holder, c, __ATOMIC_RELAXED);
    return 1;
}

static void vt_stack_release(struct vt_stack *s)
{
    __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
}

/* Whether carrier c holds run stack s now (holder is a hint: exact while c holds s). */
static int vt_stack_held_by(struct vt_stack *s, struct carrier *c)
{
    return __atomic_load_n(&s->busy, __ATOMIC_RELAXED) &&
           __atomic_load_n(&s->holder, __ATOMIC_RELAXED) == c;
}

/* A descriptor from the carrier's cache (its saved buffer and TSan fiber kept), or new. */
static struct vt *vt_alloc(void)
{
    struct carrier *c = carrier_self;
    struct vt *v = c ? c->cache : NULL;
    if (!v) {
        v = xcalloc(1, sizeof *v);
        v->tsan_fiber = TSAN_CREATE();
        v->saved_cap = VT_FRAME_BYTES ? 256 : 0;
        v->saved = VT_FRAME_BYTES ? xmalloc(v->saved_cap) : NULL;
        return v;
    }
    c->cache = v->next;
    return v;
}

/* Back to the calling carrier's cache: type-stable memory, see vt_unpark. Off a carrier
 * (the main thread after rt_join) it is freed for good. */
static void vt_free(struct vt *v)
{
    struct carrier *c = carrier_self;
    if (c) {
        v->next = c->cache;
        c->cache = v;
        return;
    }
    if (v->tsan_fiber)
        TSAN_DESTROY(v->tsan_fiber);
    free(v->saved);
    free(v);
}

/* ---- I.7 Switching ---- */

/* Between a virtual thread and its carrier's scheduler, and the calls built on that. A
 * thread that parks, yields, joins or exits sets its state and switches to the scheduler
 * loop's context (vt_to_scheduler); once the thread's registers are saved there, the
 * scheduler finishes the transition (carrier_after_run, Loom's afterYield: a parking thread
 * becomes PARKED, or runnable again if an unpark came meanwhile; a yielder is queued again)
 * and runs the next thread (carrier_run). In short:
 *   vt_park:     state = PARKING, then switch to the scheduler
 *   scheduler:   state = PARKED; if a permit came meanwhile, RUNNABLE and queued again;
 *                then take the next thread, put its frames on its stack, switch to it
 *   vt_unpark:   permit = 1; a PARKED thread is claimed by a CAS to RUNNABLE and queued
 * That is the runtime in its simplest correct form: every hand-over is two register swaps,
 * through the scheduler. The seam's four calls here (fast_switch, fast_exit_next,
 * fast_resumed, fast_keep_joiner) are where I.9 shortens the common cases; in the simple
 * build they do nothing. */

/* What every context that resumes does first: release the stack of a thread that exited
 * (it cannot release the stack it runs on), then what a fast path left to it (I.9). */
static inline void vt_resumed(struct carrier *c)
{
    if (c->release_stk) {
        vt_stack_release(c->release_stk);
        c->release_stk = NULL;
    }
    fast_resumed(c);
}

/* From a virtual thread back to its carrier's scheduler loop. */
static void vt_to_scheduler(struct carrier *c, struct vt *v)
{
    void **fake = v->state == VT_EXITING ? NULL : &v->asan_fake; /* it never returns */
    san_before_switch(fake, c->asan_sched_lo, c->asan_sched_size, c->tsan_sched);
    vt_ctx_switch(&v->ctx, &c->sched_ctx);
    c = v->carrier; /* it may resume on another carrier (stolen) */
    san_after_switch(v->asan_fake, &c->asan_sched_lo, &c->asan_sched_size);
    vt_resumed(c);
}

__attribute__((noreturn)) static void vt_exit(struct vt *v);

/* Every virtual thread starts here, on its run stack, and never returns: when fn returns the
 * thread ends in vt_exit, and the next context releases its stack, since a thread cannot
 * release the stack it runs on. */
static void vt_boot(void *arg)
{
    struct vt *v = arg;
    san_after_switch(NULL, &v->carrier->asan_sched_lo, &v->carrier->asan_sched_size);
    vt_resumed(v->carrier);
    v->fn(v->arg);
    vt_exit(v);
}

/* Finish a join's park (Loom's afterYield for a thread blocked in Thread.join), with v's
 * registers saved and v's run stack s held by c: publish v in its child's join word, where
 * the child's exit finds it (vt_finish). The join word is the only wake-up of a VT_JOINED
 * thread, so the exit takes it without a CAS on its state, and the joiner without a permit
 * handshake. s is released and a CAS publishes v, or finds the child done and v runs on;
 * the seam may keep s instead (fast_keep_joiner). */
static void carrier_after_join(struct carrier *c, struct vt_stack *s, struct vt *v)
{
    struct vt *none = NULL;
    OWN_ADD(c->parked, 1);
    __atomic_store_n(&v->state, VT_JOINED, __ATOMIC_RELAXED);
    if (fast_keep_joiner(c, s, v))
        return;
    vt_stack_release(s);
    if (__atomic_compare_exchange_n(&v->joining->join_word, &none, v, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return; /* v belongs to its child's exit from here on */
    OWN_ADD(c->parked, -1);
    __atomic_store_n(&v->state, VT_RUNNABLE, __ATOMIC_RELAXED);
    vt_enqueue(v);
}

/* After v switched back to carrier c: finish the transition it asked for. */
static void carrier_after_run(struct carrier *c, struct vt_stack *s, struct vt *v)
{
    int st = __atomic_load_n(&v->state, __ATOMIC_RELAXED), parking = VT_PARKED;
    if (st == VT_JOINING) {
        carrier_after_join(c, s, v);
        return;
    }
    vt_stack_release(s);
    if (st == VT_PARKING) {
        OWN_ADD(c->parked, 1);
        __atomic_store_n(&v->state, VT_PARKED, __ATOMIC_SEQ_CST);
        /* an unpark that saw PARKING left its permit: take the park back */
        if (__atomic_load_n(&v->permit, __ATOMIC_SEQ_CST) &&
            __atomic_compare_exchange_n(&v->state, &parking, VT_RUNNABLE, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED)) {
            OWN_ADD(c->parked, -1);
            vt_enqueue(v);
        }
    } else if (st == VT_YIELDING) {
        __atomic_store_n(&v->state, VT_RUNNABLE, __ATOMIC_RELAXED);
        vt_enqueue(v); /* behind the threads queued meanwhile */
    }
}

/* Put u's frames on its run stack (held by c) and make it c's running thread. */
static inline __attribute__((always_inline)) void carrier_install(struct carrier *c, struct vt *u)
{
    struct vt_stack *s = u->stk;
    if (s->owner != u) {
        if (s->owner)
            vt_stack_save(c, s, s->owner);
        if (u->ctx.sp)
            vt_stack_restore(c, s, u);
        else /* its first run: no frames to copy, the boot frame is built where it runs */
            vt_frame_init(&u->ctx, s->hi, vt_boot, u);
        s->owner = u;
    }
    u->carrier = c;
    __atomic_store_n(&u->permit, 0, __ATOMIC_RELAXED); /* Loom's runContinuation: consumed */
    __atomic_store_n(&u->state, VT_RUNNING, __ATOMIC_RELAXED);
    c->cur = u;
    OWN_ADD(c->runs, 1);
}

/* Install u on c and switch to it from the context saved in *from. */
static inline __attribute__((always_inline)) void
vt_switch_to(struct carrier *c, struct vt_ctx *from, void **fake, struct vt *u)
{
    carrier_install(c, u);
    san_before_switch(fake, u->stk->lo, (size_t)(u->stk->hi - u->stk->lo), u->tsan_fiber);
    vt_ctx_switch(from, &u->ctx);
}

/* Run v until it parks, yields or finishes. Like Loom's Continuation.run, this first puts
 * v's frames back on its stack (here: copies them back, unless they are still there). If
 * another carrier holds that stack, v goes to that carrier's queue instead. */
static void carrier_run(struct carrier *c, struct vt *v)
{
    struct vt_stack *s = v->stk;
    if (!vt_stack_acquire(s, c)) {
        struct carrier *h = __atomic_load_n(&s->holder, __ATOMIC_RELAXED);
        runq_push(h, v);
        carrier_signal(h);
        return;
    }
    carrier_install(c, v);
    __atomic_store_n(&c->busy, 1, __ATOMIC_RELAXED);
    san_before_switch(&c->asan_fake, s->lo, (size_t)(s->hi - s->lo), v->tsan_fiber);
    vt_ctx_switch(&c->sched_ctx, &v->ctx);
    san_after_switch(c->asan_fake, NULL, NULL);
    vt_resumed(c);
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELAXED);
    v = c->cur; /* not always the one we switched to, and NULL after an exit: see vt_exit */
    c->cur = NULL;
    if (v)
        carrier_after_run(c, v->stk, v);
}

/* A thread's function returned: its frames are garbage, and a joiner is told (Loom's
 * afterTerminate). A joiner found in the join word is final (only this exit changes it
 * again), so it needs no exchange; otherwise VT_JOIN_DONE is swapped in, racing a joiner's
 * CAS. A joinable thread's struct belongs to its joiner once the joiner is woken or
 * VT_JOIN_DONE is in, so this is the last use of v. Returns the joiner, made runnable (this
 * exit is its only waker, so no CAS claims it) but not queued, or NULL. */
static struct vt *vt_finish(struct carrier *c, struct vt *v)
{
    __atomic_store_n(&v->state, VT_DONE, __ATOMIC_RELAXED);
    __atomic_store_n(&c->finished, c->finished + 1, __ATOMIC_RELEASE); /* see rt_all_finished */
    if (v->detached) {
        vt_free(v);
        return NULL;
    }
    struct vt *j = __atomic_load_n(&v->join_word, __ATOMIC_ACQUIRE);
    if (!j)
        j = __atomic_exchange_n(&v->join_word, VT_JOIN_DONE, __ATOMIC_ACQ_REL);
    if (!j)
        return NULL;
    OWN_ADD(c->parked, -1); /* c is the calling carrier (vt_exit) */
    __atomic_store_n(&j->state, VT_RUNNABLE, __ATOMIC_RELAXED);
    return j;
}

/* The end of a thread, on its own run stack: it is finished before it switches away (its
 * registers are not needed again, so they go to c->dead_ctx, and v is not touched after
 * vt_finish), its joiner is queued, and the carrier runs its scheduler, or the thread the
 * seam picks to switch to straight (fast_exit_next: the joiner, or the next queued thread).
 * Its run stack is released by whichever context runs next. */
__attribute__((noreturn)) static void vt_exit(struct vt *v)
{
    struct carrier *c = v->carrier;
    struct vt_stack *s = v->stk;
    s->owner = NULL; /* its frames are garbage */
    /* TSan: leave v's fiber for the scheduler's before v is handed over. Its joiner may free
     * v and another carrier reuse the descriptor, fiber included, while we still run here;
     * switching to a fiber that is current elsewhere kills TSan (a CHECK in ProcWire). */
    TSAN_SWITCH(c->tsan_sched);
    struct vt *j = vt_finish(c, v);
    struct vt *u = fast_exit_next(c, s, j); /* its run stack is held by c now */
    if (j && u != j)
        vt_enqueue(j);
    c->release_stk = s;
    if (u) {
        vt_switch_to(c, &c->dead_ctx, NULL, u);
    } else {
        c->cur = NULL; /* nothing for carrier_run to finish */
        san_before_switch(NULL, c->asan_sched_lo, c->asan_sched_size, c->tsan_sched);
        vt_ctx_switch(&c->dead_ctx, &c->sched_ctx);
    }
    abort(); /* an exited thread is never switched to again */
}

/* Switch away from v, c's running thread, which leaves as `st` (VT_PARKING, VT_JOINING or
 * VT_YIELDING): to the scheduler, unless the seam switches straight to the next queued
 * thread (fast_switch). Returns when v runs again. */
static void vt_switch_away(struct carrier *c, struct vt *v, int st)
{
    __atomic_store_n(&v->state, st, __ATOMIC_RELAXED);
    if (!fast_switch(c, v))
        vt_to_scheduler(c, v);
}

/* Park the running thread until someone unparks it (vt_unpark). Like Loom's
 * Continuation.yield: only the thread's own frames are set aside, the carrier goes on. A
 * permit left by an earlier unpark is consumed instead of parking. */
static void vt_park(void)
{
    struct carrier *c = carrier_self;
    struct vt *v = c->cur;
    /* a plain load first: a permit that comes later is seen by carrier_after_run */
    if (LOAD(v->permit) && __atomic_exchange_n(&v->permit, 0, __ATOMIC_SEQ_CST))
        return;
    vt_switch_away(c, v, VT_PARKING);
}

/* Let the other runnable threads run first (a cooperative yield): queued again behind them. */
static void vt_yield(void)
{
    vt_switch_away(carrier_self, carrier_self->cur, VT_YIELDING);
}

/* Create a thread on carrier c (any OS thread may call this). Its run stack is the next of
 * c's, not the caller's own; its first frame is built on that stack when it first runs
 * (carrier_install), so a create copies no frames. */
static struct vt *vt_spawn_on(struct carrier *c, void (*fn)(void *), void *arg, int detached)
{
    struct carrier *me = carrier_self; /* once: the stores below might alias a TLS reload */
    struct vt *v = vt_alloc();
    unsigned k = LOAD(c->next_stk); /* a hint: a lost update only skews the round-robin */
    struct vt_stack *stk = &rt.stacks[c->id * VT_STACKS + (int)(k % VT_STACKS)];
    /* Not a stack the calling carrier holds: the caller's own (the child could only run once
     * our frames are copied), nor a joiner's that the fast paths keep while its child runs
     * (fast_keep_joiner): a thread there could run nowhere else until it is released, not
     * even stolen. Two of VT_STACKS at most are held so; `holder` is a hint, so the loop is
     * bounded anyway. */
    for (int i = 0; me && i < VT_STACKS && vt_stack_held_by(stk, me); i++)
        stk = &rt.stacks[c->id * VT_STACKS + (int)(++k % VT_STACKS)];
    __atomic_store_n(&c->next_stk, k + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&v->stk, stk, __ATOMIC_RELAXED); /* a thief may still read it: runq_steal */
    v->carrier = c;
    v->fn = fn;
    v->arg = arg;
    v->detached = detached;
    v->heap_idx = -1;
    v->wait_fd = -1;
    v->wait_c = NULL, v->woke = VT_WOKE_EVENT; /* not cancelled (vt_cancel) */
    v->pinned = 0;
    v->join_word = NULL;
    /* atomic: a late unpark or park finish of this descriptor's previous thread may still
     * read them (descriptors are type-stable; see vt_unpark_claim) */
    __atomic_store_n(&v->permit, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&v->state, VT_RUNNABLE, __ATOMIC_RELAXED);
    v->saved_len = 0;
    v->ctx.sp = NULL; /* not started: carrier_install builds its first frame in place */
    if (me)           /* no locked add on the fast path; summed by rt_all_finished */
        __atomic_store_n(&me->spawned, me->spawned + 1, __ATOMIC_RELEASE);
    else
        __atomic_fetch_add(&rt.spawned, 1, __ATOMIC_RELEASE);
    if (c == me) {
        vt_enqueue(v);
    } else {
        runq_push(c, v);
        carrier_signal(c);
    }
    return v;
}

/* Spawn on the caller's carrier if it is one (FJP pushes to the worker's own queue), else
 * round-robin. */
static struct vt *vt_spawn(void (*fn)(void *), void *arg, int detached)
{
    struct carrier *c = carrier_self;
    if (!c)
        c = &rt.carriers[SHARED_ADD(rt.next_carrier, 1) % (unsigned)rt.ncarriers];
    return vt_spawn_on(c, fn, arg, detached);
}

/* Wait for a joinable thread to finish (on any carrier), then free it. The join word makes
 * exactly one wake-up: the joiner's carrier puts it there once the joiner has switched away
 * (carrier_after_join), the child's exit swaps VT_JOIN_DONE in and wakes whoever was there. */
static void vt_join(struct vt *v)
{
    struct carrier *c = carrier_self;
    struct vt *self = c ? c->cur : NULL;
    if (!self || v->detached)
        die("vt_join: not a joinable thread, or not called on a virtual thread");
    if (__atomic_load_n(&v->join_word, __ATOMIC_ACQUIRE) != VT_JOIN_DONE) {
        self->joining = v;
        vt_switch_away(c, self, VT_JOINING); /* resumed once v is done */
    }
    vt_free(v);
}

/* Park until fd (if >= 0) is ready in direction dir, or the deadline (ns, -1 = none) passes.
 * Returns 0, or -1 with errno ETIMEDOUT or ECANCELED (shutting down, or vt_cancel). The fd must be
 * registered (io_register), with any carrier: the invariant that lets a stolen thread still
 * get its I/O events is that a park's fd slot and timer both live with the fd's owner (the
 * carrier whose epoll watches it) under that carrier's plock, and only that carrier's poll,
 * its timers, or its shutdown wake the thread, whichever carrier it parked from. It parks
 * only while the fd's `ready` is clear: a caller first proves the fd drained (io_drained).
 * Callers loop: a wake-up can be spurious (then 0 is returned). */
static int vt_wait(int fd, int dir, int64_t deadline)
{
    struct carrier *c = carrier_self;
    struct vt *v = c->cur;
    struct carrier *wc = fd >= 0 ? __atomic_load_n(&rt.io[fd].owner, __ATOMIC_ACQUIRE) : c;
    if (!wc) {
        errno = EBADF;
        return -1;
    }
    spin_lock(&wc->plock);
    if (LOAD(rt.shutdown) || LOAD(v->woke) == VT_WOKE_CANCEL) { /* a cancelled thread ends */
        spin_unlock(&wc->plock);
        errno = ECANCELED;
        return -1;
    }
    if (fd >= 0 && LOAD(rt.io[fd].ready[dir])) { /* not drained, or an edge came since */
        spin_unlock(&wc->plock);
        return 0;
    }
    __atomic_store_n(&v->wait_c, wc, __ATOMIC_RELAXED);
    v->woke = VT_WOKE_EVENT; /* stays so if the wake-up is spurious */
    if (fd >= 0) {
        rt.io[fd].waiter[dir] = v;
        v->wait_fd = fd;
        v->wait_dir = dir;
    }
    int earliest = 0;
    if (deadline >= 0) {
        timer_add(wc, v, deadline);
        earliest = v->heap_idx == 0 && wc != c; /* wc may sleep until a later deadline */
    }
    spin_unlock(&wc->plock);
    if (earliest) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        carrier_wake(wc);
    }
    vt_park();
    if (__atomic_load_n(&v->wait_c, __ATOMIC_ACQUIRE)) { /* spurious: unregister ourselves */
        spin_lock(&wc->plock);
        if (LOAD(v->wait_c)) {
            if (v->heap_idx >= 0)
                timer_remove(wc, v);
            if (v->wait_fd >= 0)
                rt.io[v->wait_fd].waiter[v->wait_dir] = NULL;
            v->wait_fd = -1;
            __atomic_store_n(&v->wait_c, NULL, __ATOMIC_RELAXED);
        }
        spin_unlock(&wc->plock);
    }
    if (LOAD(v->woke) == VT_WOKE_CANCEL) {
        errno = ECANCELED;
        return -1;
    }
    if (LOAD(v->woke) == VT_WOKE_TIMEOUT) {
        errno = ETIMEDOUT;
        return -1;
    }
    return 0;
}

/* ---- I.8 The carrier loop ---- */

/* Each carrier's pthread runs carrier_main, a plain loop like xv6's scheduler: expire its
 * timers, run the threads queued on it (carrier_batch), steal from another carrier when it
 * has none, and sleep in epoll when no carrier has any (carrier_sleep, the protocol of I.5).
 * Between batches it polls I/O without waiting (the seam's fast_poll_due spaces the polls
 * out). Starting and stopping the carriers is in I.11. */

static void carrier_expire_timers(struct carrier *c, int64_t now)
{
    spin_lock(&c->plock);
    while (c->heap_len && c->heap[0].deadline <= now)
        vt_wake_locked(c->heap[0].v, VT_WOKE_TIMEOUT);
    spin_unlock(&c->plock);
}

/* Shutdown: wake every thread parked on this carrier's fds and timers with ECANCELED, once.
 * Threads parked in vt_join are left alone: the children they wait for are being cancelled
 * too. Parks that come later fail at once (vt_wait reads rt.shutdown under the same lock). */
static void carrier_cancel_all(struct carrier *c)
{
    c->cancelled_all = 1;
    spin_lock(&c->plock);
    for (int fd = 0; fd < rt.io_cap; fd++) {
        if (LOAD(rt.io[fd].owner) != c)
            continue; /* another carrier's fd: its waiters too */
        for (int d = 0; d < 2; d++)
            if (rt.io[fd].waiter[d])
                vt_wake_locked(rt.io[fd].waiter[d], VT_WOKE_CANCEL);
    }
    while (c->heap_len)
        vt_wake_locked(c->heap[0].v, VT_WOKE_CANCEL);
    spin_unlock(&c->plock);
}

/* How long the carrier may sleep in epoll: until the earliest timer (ns), or -1 = forever. */
static int64_t carrier_timeout_ns(struct carrier *c)
{
    spin_lock(&c->plock);
    int64_t d = c->heap_len ? c->heap[0].deadline - now_ns() : -1;
    int none = !c->heap_len;
    spin_unlock(&c->plock);
    return none ? -1 : d < 0 ? 0 : d;
}

/* Record one epoll event of fd under c's plock (Go's netpollready): mark the directions it
 * reports ready, count the edge, and wake their waiters. */
static void carrier_dispatch(struct carrier *c, struct vt_io *io, uint32_t e)
{
    static const uint32_t mask[2] = {EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR,
                                     EPOLLOUT | EPOLLHUP | EPOLLERR};
    static const uint32_t fin[2] = {EPOLLRDHUP | EPOLLHUP | EPOLLERR, EPOLLHUP | EPOLLERR};
    if (LOAD(io->owner) != c)
        return; /* stale event for an fd closed in this batch */
    for (int d = 0; d < 2; d++) {
        if (!(e & mask[d]))
            continue;
        __atomic_store_n(&io->edges[d], io->edges[d] + 1, __ATOMIC_RELEASE);
        __atomic_store_n(&io->ready[d], 1, __ATOMIC_RELAXED);
        if (e & fin[d])
            io->final[d] = 1;
        if (io->waiter[d])
            vt_wake_locked(io->waiter[d], VT_WOKE_EVENT);
    }
}

/* epoll_wait with a timeout in ns (-1 = forever). epoll_pwait2 takes nanoseconds, so a 50 ms
 * sleep does not become 51 by rounding up to epoll_wait's milliseconds; kernels before 5.11
 * (and Valgrind) get the fallback. */
static int carrier_epoll_wait(int epfd, struct epoll_event *ev, int n, int64_t timeout_ns)
{
    struct timespec ts = {timeout_ns / NS_PER_S, timeout_ns % NS_PER_S};
    if (!LOAD(rt.no_pwait2)) {
        int got = epoll_pwait2(epfd, ev, n, timeout_ns < 0 ? NULL : &ts, NULL);
        if (got >= 0 || errno != ENOSYS)
            return got;
        __atomic_store_n(&rt.no_pwait2, 1, __ATOMIC_RELAXED); /* ask once, not every poll */
    }
    return epoll_wait(epfd, ev, n,
                      timeout_ns < 0 ? -1 : (int)((timeout_ns + NS_PER_MS - 1) / NS_PER_MS));
}

/* Wait for I/O readiness (timeout in ns, -1 = forever) and wake the threads waiting on it;
 * they go to this carrier's queue (the carrier whose epoll saw the event), where an idle
 * carrier may steal them. */
static void carrier_poll(struct carrier *c, int64_t timeout_ns)
{
    struct epoll_event ev[256];
    int n = carrier_epoll_wait(c->epfd, ev, (int)ARRAY_LEN(ev), timeout_ns);
    c->polled_at = now_ns();
    /* Awake now: the wake-ups below push to our own queue, and must not see us sleeping
     * (each would write our eventfd, and the next poll read it: two syscalls per wake-up). */
    if (LOAD(c->sleeping) && __atomic_exchange_n(&c->sleeping, 0, __ATOMIC_SEQ_CST))
        SHARED_ADD(rt.nsleeping, -1);
    if (n <= 0)
        return;
    spin_lock(&c->plock);
    for (int i = 0; i < n; i++) {
        if (ev[i].data.u64 == UINT64_MAX) { /* the wake eventfd */
            uint64_t cnt;
            if (read(c->wakefd, &cnt, sizeof cnt) < 0 && errno != EAGAIN)
                die("eventfd read: %s", strerror(errno));
            continue;
        }
        carrier_dispatch(c, &rt.io[ev[i].data.u64], ev[i].events);
    }
    spin_unlock(&c->plock);
}

/* Whether d's queue is worth stealing from: d is busy running a thread (its queue waits
 * behind it) or has a backlog. A thread queued on an idle carrier about to run it is left
 * there: moving it costs a migration (its fds stay with d, so its next events come back to
 * d) and gains nothing. */
static int carrier_stealable(struct carrier *d)
{
    long n = runq_len(d);
    return n && (LOAD(d->busy) || n >= VT_STEAL_BACKLOG);
}

/* The oldest thread of another carrier's queue, or NULL: the steal (see I.5). */
static struct vt *carrier_steal(struct carrier *c)
{
    for (int i = 1; i < rt.ncarriers; i++) {
        struct carrier *d = &rt.carriers[(c->id + c->steal_from + (unsigned)i) % rt.ncarriers];
        struct vt *v = carrier_stealable(d) ? runq_steal(d) : NULL;
        if (v) {
            c->steal_from = (unsigned)(d->id - c->id + rt.ncarriers) % (unsigned)rt.ncarriers - 1;
            OWN_ADD(c->steals, 1);
            return v;
        }
    }
    return NULL;
}

/* Whether another carrier's queue is stealable (carrier_stealable). */
static int rt_any_stealable(struct carrier *c)
{
    for (int i = 0; i < rt.ncarriers; i++)
        if (&rt.carriers[i] != c && carrier_stealable(&rt.carriers[i]))
            return 1;
    return 0;
}

/* Nothing to run here or to steal: sleep in epoll until an event, a timer or a wake-up, by
 * the protocol of I.5 (set sleeping, fence, look again). Work found on the second look is
 * taken by polling without waiting: always our own, stealable work only once in a row
 * (`again`), so a steal that keeps failing (its threads' stacks held) does not spin in
 * epoll_wait; the next push to that backlog wakes us. */
static void carrier_sleep(struct carrier *c, int again)
{
    __atomic_store_n(&c->sleeping, 1, __ATOMIC_SEQ_CST);
    SHARED_ADD(rt.nsleeping, 1);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    int busy = runq_len(c) || LOAD(rt.shutdown) || (!again && rt_any_stealable(c));
    carrier_poll(c, busy ? 0 : carrier_timeout_ns(c)); /* which clears sleeping */
}

/* Threads created and finished so far, summed over the carriers. */
static void rt_counts(uint64_t *spawned, uint64_t *finished)
{
    *finished = __atomic_load_n(&rt.finished, __ATOMIC_ACQUIRE);
    for (int i = 0; i < rt.ncarriers; i++)
        *finished += __atomic_load_n(&rt.carriers[i].finished, __ATOMIC_ACQUIRE);
    *spawned = __atomic_load_n(&rt.spawned, __ATOMIC_ACQUIRE);
    for (int i = 0; i < rt.ncarriers; i++)
        *spawned += __atomic_load_n(&rt.carriers[i].spawned, __ATOMIC_ACQUIRE);
}

/* Every virtual thread has finished (shutdown waits for this). Finishes are read before
 * spawns, with acquire: a thread's spawn happens before its finish, and before any spawn it
 * makes, so a finish seen brings every spawn before it, and an alive thread keeps the spawn
 * count of its ancestors' line above the finish count. */
static int rt_all_finished(void)
{
    uint64_t s, f;
    rt_counts(&s, &f);
    return s == f;
}

/* One pass: timers, then the threads queued now (not those they make runnable: I/O is
 * polled between batches so that it is never starved, as libdill does). Returns how many
 * threads ran. */
static long carrier_batch(struct carrier *c)
{
    if (LOAD(c->heap_len))
        carrier_expire_timers(c, now_ns());
    if (LOAD(rt.shutdown) && !c->cancelled_all)
        carrier_cancel_all(c);
    long n = runq_len(c), ran = 0;
    for (struct vt *v; ran < n && (v = runq_pop(c)); ran++)
        carrier_run(c, v);
    return ran;
}

static void *carrier_main(void *arg)
{
    struct carrier *c = arg;
    carrier_self = c;
    c->tsan_sched = TSAN_CURRENT(); /* this thread's own fiber runs the scheduler loop */
    stack_t ss = {.ss_sp = c->altstack, .ss_size = VT_ALTSTACK, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    for (;;) {
        long ran = carrier_batch(c);
        if (!ran) {
            struct vt *v = carrier_steal(c);
            if (v) {
                c->idle_looks = 0;
                carrier_run(c, v);
                continue;
            }
        }
        if (LOAD(rt.shutdown) && rt_all_finished() && !runq_len(c))
            break;
        if (!runq_len(c) && !ran) {
            carrier_sleep(c, c->idle_looks++ > 0);
            continue;
        }
        c->idle_looks = 0;
        if (fast_poll_due(c, ran))
            carrier_poll(c, 0);
    }
    for (int i = 0; i < rt.ncarriers; i++) /* the others may sleep with nothing left */
        carrier_wake(&rt.carriers[i]);
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    carrier_self = NULL;
    return NULL;
}

/* ~~~~ The lesson ends: the rest of Part I is fast paths, I/O and the interface ~~~~ */

/* ---- I.9 Fast paths ---- */

/* Four layers over the mechanism of I.5 to I.8, for the common case of threads that hand
 * over to each other on one carrier, each entering it only through the seam declared in I.3;
 * none changes what a thread can observe. Each can be turned off (rt.fast_off, while the
 * runtime is stopped) and the simple build (-DVT_SIMPLE, make test-simple) has none:
 * `./aggregator microbench` measures what each buys, side by side (yield, create + join,
 * park + unpark).
 *   1. The front slot: a queue's oldest thread sits in a slot its owner fills without a
 *      locked instruction, so a thread queued on an idle queue and taken at once (a spawn
 *      and its join, a wake-up) takes no lock.
 *   2. Direct switches: a thread that parks, yields, joins or exits switches straight to the
 *      next queued thread, one register swap where the scheduler would take two.
 *   3. The kept joiner stack: a joiner whose child runs next on its carrier keeps its run
 *      stack, so the child's exit runs it again with no atomic on the stack.
 *   4. Polling in batches: with work queued, a carrier polls its epoll only every so many
 *      runs, and a thread that needs the fresh readiness of its fds polls without waiting. */
#ifdef VT_SIMPLE
#define FAST_ON(layer) 0 /* every seam call is its simple form */
#else
#define FAST_ON(layer) (!(rt.fast_off & (layer)))
#endif
/* Layer 2 never runs under ASan: its fiber bookkeeping expects the scheduler's stack between
 * two threads. */
#if defined(VT_ASAN) || defined(VT_SIMPLE)
#define VT_DIRECT_SWITCH 0
#else
#define VT_DIRECT_SWITCH 1
#endif
#define VT_POLL_CHECK_RUNS 61           /* see fast_poll_due */
#define VT_POLL_EVERY_NS   (500 * 1000) /* ditto */

/* Turn off the layers in `off` (FAST_* bits; 0: all on again), only while the runtime is
 * stopped: a thread left in a front slot would be lost (microbench). */
static void fast_set_off(int off)
{
    rt.fast_off = off;
}

/* Layer 1, the front slot. The owner puts a thread in the slot when the whole queue is
 * empty, with a release store (no locked instruction: only the owner fills the slot, takers
 * only empty it), so the slot always holds the oldest thread; everyone takes the slot first,
 * the owner with an exchange and a thief with a CAS, then the list's head under the lock.
 * It is Go's run queue (a ring its owner pushes to with plain stores, which consumers take
 * by CAS) reduced to one entry. Other pushes (a full slot, other OS threads) take the lock. */

/* Queue v in c's front slot, by c's owner, if the whole queue is empty; 0 if not. */
static inline int fast_push(struct carrier *c, struct vt *v)
{
    if (!FAST_ON(FAST_FRONT) || LOAD(c->qlen) || LOAD(c->front))
        return 0;
    __atomic_store_n(&c->front, v, __ATOMIC_RELEASE);
    return 1;
}

static inline long fast_len(struct carrier *c)
{
    return FAST_ON(FAST_FRONT) && LOAD(c->front);
}

/* The slot's thread, or NULL: the owner's take is one exchange, racing the thieves' CAS; a
 * thief takes it only if no carrier holds its run stack. */
static inline struct vt *fast_take(struct carrier *c, int thief)
{
    struct vt *f = FAST_ON(FAST_FRONT) ? __atomic_load_n(&c->front, __ATOMIC_ACQUIRE) : NULL;
    if (!f || !thief)
        return f ? __atomic_exchange_n(&c->front, NULL, __ATOMIC_ACQUIRE) : NULL;
    /* f may be taken, run and its descriptor reused meanwhile: the CAS fails then, or takes
     * a runnable thread judged by a stale stack (carrier_run hands it to the holder) */
    if (!__atomic_load_n(&__atomic_load_n(&f->stk, __ATOMIC_RELAXED)->busy, __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&c->front, &f, NULL, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return f;
    return NULL;
}

/* Layer 2, direct switches: one register swap from the leaving thread to the next, with no
 * scheduler context between them; the next context finishes the leaver's transition
 * (fast_resumed). A goroutine's Gosched goes through its scheduler instead. */

/* Whether a thread leaving now may switch straight to the next one: not every
 * VT_POLL_CHECK_RUNS runs (the scheduler then polls I/O and timers). */
static inline int fast_direct_ok(struct carrier *c)
{
    return VT_DIRECT_SWITCH && FAST_ON(FAST_DIRECT) && ++c->unpolled_runs < VT_POLL_CHECK_RUNS;
}

/* Take run stack s for a direct switch on c: the joiner's stack c keeps is c's already. */
static int fast_stack_take(struct carrier *c, struct vt_stack *s)
{
    if (s != c->kept_stk)
        return vt_stack_acquire(s, c);
    c->kept_stk = NULL;
    return 1;
}

/* For a thread leaving its run stack `mine`: take the head u of c's queue (the slot, else the
 * list's) if u's run stack is another one and free (then c holds it), and queue `back` (a
 * yielder, or NULL) at the tail: in the list under the same lock, or in the slot if nothing
 * else is queued, so two threads yielding to each other never take the lock; NULL leaves
 * the queue as it was. A yielder stays unstealable until its stack is released after the
 * switch (thieves skip held stacks). */
static struct vt *fast_take_next(struct carrier *c, struct vt_stack *mine, struct vt *back)
{
    struct vt *u = fast_take(c, 0);
    if (u) {
        if (u->stk == mine || !fast_stack_take(c, u->stk)) {
            __atomic_store_n(&c->front, u, __ATOMIC_RELEASE); /* still the oldest */
            return NULL;
        }
        if (back) {
            __atomic_store_n(&back->state, VT_RUNNABLE, __ATOMIC_RELAXED);
            if (!fast_push(c, back))
                runq_push(c, back);
        }
        return u;
    }
    if (!LOAD(c->qlen))
        return NULL;
    spin_lock(&c->qlock);
    u = c->runq_head;
    if (!u || u->stk == mine || !fast_stack_take(c, u->stk)) {
        spin_unlock(&c->qlock);
        return NULL;
    }
    runq_shift_locked(c);
    if (back)
        __atomic_store_n(&back->state, VT_RUNNABLE, __ATOMIC_RELAXED);
    int alone = back && !c->runq_head && FAST_ON(FAST_FRONT); /* nothing for it to wait behind */
    if (back && !alone)
        runq_append_locked(c, back);
    else
        __atomic_store_n(&c->qlen, c->qlen - 1, __ATOMIC_RELAXED);
    spin_unlock(&c->qlock);
    if (alone) /* the slot is empty (fast_take found it so) and only we fill it */
        __atomic_store_n(&c->front, back, __ATOMIC_RELEASE);
    return u;
}

/* Switch from v, c's running thread, which has set the state it leaves in, straight to the
 * head of c's queue when fast_direct_ok allows and fast_take_next finds one (a yielder is
 * queued at the tail): returns 0 if not, else 1 once v runs again. */
static inline __attribute__((always_inline)) int fast_switch(struct carrier *c, struct vt *v)
{
    struct vt *back = LOAD(v->state) == VT_YIELDING ? v : NULL;
    struct vt *u = fast_direct_ok(c) ? fast_take_next(c, v->stk, back) : NULL;
    if (!u)
        return 0;
    c->prev = v; /* a yielder is RUNNABLE already: the next context only releases its stack */
    vt_switch_to(c, &v->ctx, &v->asan_fake, u);
    c = v->carrier; /* it may resume on another carrier (stolen) */
    san_after_switch(v->asan_fake, &c->asan_sched_lo, &c->asan_sched_size);
    vt_resumed(c);
    return 1;
}

/* The thread an exit on run stack s switches straight to, its stack now held by c, or NULL:
 * its joiner j if nothing else is queued (queueing it and taking it back would be the same),
 * else the head of the queue when fast_direct_ok allows. */
static struct vt *fast_exit_next(struct carrier *c, struct vt_stack *s, struct vt *j)
{
    int direct = fast_direct_ok(c);
    if (j && VT_DIRECT_SWITCH && FAST_ON(FAST_DIRECT) && !runq_len(c) && j->stk != s &&
        fast_stack_take(c, j->stk))
        return j;
    return direct ? fast_take_next(c, s, NULL) : NULL;
}

/* In the context that runs after a direct switch: release a joiner's kept stack (layer 3:
 * the child that could use it has left) and finish the transition of the thread that
 * switched straight here (c->prev; it may keep its stack anew). */
static inline void fast_resumed(struct carrier *c)
{
    if (c->kept_stk) {
        vt_stack_release(c->kept_stk);
        c->kept_stk = NULL;
    }
    if (c->prev) {
        struct vt *p = c->prev;
        c->prev = NULL;
        carrier_after_run(c, p->stk, p);
    }
}

/* Layer 3, the kept joiner stack. Finish a join's park without releasing the joiner's stack
 * s, when its child is the thread c runs now (v switched straight to it: the create-and-join
 * case). That child cannot be exiting anywhere, so a plain store publishes v in its join
 * word, and c keeps s: the exit, which runs the joiner next on this carrier when nothing is
 * queued, needs no atomic on the stack either. Returns 0 if the child runs elsewhere. */
static int fast_keep_joiner(struct carrier *c, struct vt_stack *s, struct vt *v)
{
    if (!FAST_ON(FAST_KEPT) || v->joining != c->cur)
        return 0;
    c->kept_stk = s;
    __atomic_store_n(&v->joining->join_word, v, __ATOMIC_RELAXED);
    return 1;
}

/* Layer 4, polling in batches. With work queued, whether to poll (without waiting) now:
 * when VT_POLL_EVERY_NS passed since the last poll, the clock read once per
 * VT_POLL_CHECK_RUNS runs (Tokio's event_interval is 61 tasks). Enough to keep I/O flowing
 * under CPU load, without an epoll_wait per handful of yields (a syscall that would cost as
 * much as the yields), and with events gathered in batches: a shorter interval multiplies
 * the epoll_wait calls per request. The simple form polls after every batch. */
static inline int fast_poll_due(struct carrier *c, long ran)
{
    c->unpolled_runs += (unsigned)ran;
    if (FAST_ON(FAST_POLL) && c->unpolled_runs < VT_POLL_CHECK_RUNS)
        return 0;
    c->unpolled_runs = 0; /* fast_direct_ok counts from here again */
    return !FAST_ON(FAST_POLL) || now_ns() - c->polled_at >= VT_POLL_EVERY_NS;
}

/* Poll c's epoll without waiting from a virtual thread running on c (io_quiet). The
 * threads it wakes wait behind the caller, which is about to park (it writes a request and
 * waits for the answer), so they are no reason to wake a sleeping carrier to steal them, as
 * vt_enqueue would for a busy one (a wake-up costs both carriers CPU, see carrier_signal): for
 * the poll the carrier acts as its scheduler (c->cur NULL), which signals a backlog only. */
static void fast_harvest(struct carrier *c)
{
    struct vt *me = c->cur;
    c->cur = NULL;
    carrier_poll(c, 0);
    c->cur = me;
}

/* ---- I.10 I/O ---- */

/* One code path for both models. Sockets are non-blocking; a read or write that would block
 * waits in io_wait until the fd is ready or the deadline passes. On a virtual thread the fd is
 * registered with the carrier and the wait parks the thread (Loom's NIO poller mechanism); on
 * a platform thread, and on a pinned virtual thread, the OS thread blocks in poll(), which is
 * Tomcat's blocking I/O with one difference that matters: the deadline is absolute, for the
 * whole operation. A socket timeout (SO_RCVTIMEO) restarts at every byte, so a peer sending
 * one byte a second would hold a thread forever. Deadlines are absolute
 * ns, -1 for none, 0 for "do not wait" (the platform poller's non-blocking reads). */

/* The events an fd is registered for, once for its lifetime: both directions and the peer's
 * close, edge-triggered (an event per change, as Go's netpoller registers). */
#define IO_EPOLL_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)

/* Register fd (non-blocking) with the calling carrier's epoll for events, once for its
 * lifetime. Returns 0 or -1. */
static int io_register_events(int fd, uint32_t events)
{
    struct carrier *c = carrier_self;
    if (fd >= rt.io_cap) {
        errno = EMFILE;
        return -1;
    }
    struct vt_io *io = &rt.io[fd];
    /* The fd number may have been closed a moment ago on another carrier: the kernel orders
     * that close before this fd's creation, and this acquire (pairing with io_close's
     * release) tells the memory model, and ThreadSanitizer, the same. */
    (void)__atomic_load_n(&io->owner, __ATOMIC_ACQUIRE);
    io->waiter[0] = io->waiter[1] = NULL;
    for (int d = 0; d < 2; d++) {
        __atomic_store_n(&io->ready[d], 1, __ATOMIC_RELAXED); /* unknown: try the call first */
        io->final[d] = 0;
    }
    __atomic_store_n(&io->owner, c, __ATOMIC_RELEASE); /* vt_wait on other carriers reads it */
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)fd};
    if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        io->owner = NULL;
        return -1;
    }
    return 0;
}

/* Register fd with the calling carrier's epoll, edge-triggered, once for its lifetime. */
static int io_register(int fd)
{
    return io_register_events(fd, IO_EPOLL_EVENTS);
}

static int io_wait(int fd, int dir, int64_t deadline)
{
    struct vt *v = vt_current();
    if (v && !v->pinned)
        return vt_wait(fd, dir, deadline);
    for (;;) {
        int ms = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ns();
            if (left <= 0) {
                errno = ETIMEDOUT;
                return -1;
            }
            ms = (int)((left + NS_PER_MS - 1) / NS_PER_MS);
        }
        struct pollfd p = {.fd = fd, .events = dir == VT_READ ? POLLIN : POLLOUT};
        SHARED_ADD(rt.pinned_blocked, v ? 1 : 0);
        int r = poll(&p, 1, ms);
        SHARED_ADD(rt.pinned_blocked, v ? -1 : 0);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* The readiness record of fd if the calling thread parks on it (a virtual thread, not
 * pinned, the fd registered), else NULL: a pinned or platform thread polls level-triggered. */
static struct vt_io *io_watched(int fd)
{
    struct vt *v = vt_current();
    if (!v || v->pinned || fd < 0 || fd >= rt.io_cap || !LOAD(rt.io[fd].owner))
        return NULL;
    return &rt.io[fd];
}

/* The edge count to pass to io_drained, read before the call whose result proves it. */
static unsigned io_edges(const struct vt_io *io, int dir)
{
    return io ? __atomic_load_n(&io->edges[dir], __ATOMIC_ACQUIRE) : 0;
}

/* A call on io's fd begun when its edge count was `seen` found direction dir drained (eagain:
 * it saw EAGAIN; else it was short). Forget the readiness, unless an edge came since (bytes
 * or a FIN that came after the call are an event dispatched after it, which set ready again)
 * or a short call may have left a FIN behind (final). Go's pollDesc clears its ready state
 * the same way, when a read returns EAGAIN. */
static void io_drained(struct vt_io *io, int dir, unsigned seen, int eagain)
{
    struct carrier *wc = io ? __atomic_load_n(&io->owner, __ATOMIC_ACQUIRE) : NULL;
    if (!wc)
        return;
    spin_lock(&wc->plock);
    if (LOAD(io->edges[dir]) == seen && (eagain || !io->final[dir]))
        __atomic_store_n(&io->ready[dir], 0, __ATOMIC_RELAXED);
    spin_unlock(&wc->plock);
}

/* read or write once (dir = VT_READ or VT_WRITE), waiting as needed. Returns the count,
 * 0 on EOF (reads), or -1 with errno (ETIMEDOUT, ECANCELED, ECONNRESET, ...). On a virtual
 * thread an fd known to be drained parks first (io_wait re-checks under the owner's lock), so
 * a request-response exchange costs one read per message, not a read and an EAGAIN. */
static ssize_t io_rw(int fd, int dir, void *buf, size_t len, int64_t deadline)
{
    struct vt_io *io = io_watched(fd);
    for (;;) {
        if (io && !LOAD(io->ready[dir]) && io_wait(fd, dir, deadline) < 0)
            return -1;
        unsigned seen = io_edges(io, dir);
        ssize_t n =
            dir == VT_READ ? read(fd, buf, len) : write(fd, buf, len); /* SIGPIPE is ignored */
        if (n > 0 && (size_t)n < len)
            io_drained(io, dir, seen, 0);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return -1;
        if (io)
            io_drained(io, dir, seen, 1); /* and park at the top, unless an edge came */
        else if (io_wait(fd, dir, deadline) < 0)
            return -1;
    }
}

static int io_write_all(int fd, const void *buf, size_t len, int64_t deadline)
{
    const char *p = buf;
    while (len) {
        ssize_t n = io_rw(fd, VT_WRITE, (void *)p, len, deadline);
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void io_close(int fd)
{
    if (fd < 0)
        return;
    struct carrier *c = rt.io && fd < rt.io_cap ? LOAD(rt.io[fd].owner) : NULL;
    if (c) {
        spin_lock(&c->plock); /* its poll may be dispatching an event of this fd */
        rt.io[fd].waiter[0] = rt.io[fd].waiter[1] = NULL;
        __atomic_store_n(&rt.io[fd].owner, NULL, __ATOMIC_RELEASE); /* see io_register */
        spin_unlock(&c->plock);
    }
    close(fd);
}

/* Prepare a new socket for the calling thread's model: non-blocking, and registered with the
 * carrier on a virtual thread. Closes it on failure. */
static int io_adopt(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0 || (vt_current() && io_register(fd) < 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Connect to sa; returns an adopted fd or -1 with errno (EADDRNOTAVAIL when ephemeral ports
 * run out, ETIMEDOUT, ECONNREFUSED, ...). */
static int io_connect(const struct sockaddr_in *sa, int64_t deadline)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || io_adopt(fd) < 0)
        return -1;
    struct vt_io *io = io_watched(fd);
    unsigned seen = io_edges(io, VT_WRITE);
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0)
        return fd;
    int err = errno;
    if (err == EINPROGRESS)
        io_drained(io, VT_WRITE, seen, 1); /* not writable until connected */
    if (err == EINPROGRESS && io_wait(fd, VT_WRITE, deadline) == 0) {
        socklen_t el = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (!err)
            return fd;
    } else if (err == EINPROGRESS) {
        err = errno;
    }
    io_close(fd);
    errno = err;
    return -1;
}

/* Accept one connection on a listening socket registered with this carrier. The new fd is
 * blocking and unregistered: the thread that serves it adopts it (io_adopt). */
static int io_accept(int lfd, int64_t deadline)
{
    struct vt_io *io = io_watched(lfd);
    for (;;) {
        if (io && !LOAD(io->ready[VT_READ]) && io_wait(lfd, VT_READ, deadline) < 0)
            return -1;
        unsigned seen = io_edges(io, VT_READ);
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            return fd;
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN)
            return -1;
        if (io)
            io_drained(io, VT_READ, seen, 1);
        else if (io_wait(lfd, VT_READ, deadline) < 0)
            return -1;
    }
}

/* Parse "HOST:PORT" (HOST a dotted IPv4 address or "localhost"). Returns 0 or -1. */
static int parse_hostport(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port <= 0 || port > 65535)
        return -1;
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (!strcmp(host, "localhost"))
        strcpy(host, "127.0.0.1");
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* A listening socket on host:port (port 0: any free port; *port_out gets the real one). No
 * SO_REUSEPORT: the port is this process's alone, so a second server on it is refused. */
static int io_listen_on(const char *host, int port, int backlog, int *port_out);

/* Port 0: a free port outside the ephemeral range (net.ipv4.ip_local_port_range). The kernel
 * would pick one inside it, among the source ports of every connect() on the machine: a
 * client of a backend there that is down can connect to itself (client_self_connected), and
 * its TIME_WAIT, or another connection's source port, then takes the port the backend
 * restarts on. Below the range first, from a point that the pid spreads (servers started
 * together try different ports), then above it; the kernel's choice if none is free. */
static int io_listen(const char *host, int port, int backlog, int *port_out)
{
    struct net_ports np = proc_net_ports();
    if (port || np.low < 0)
        return io_listen_on(host, port, backlog, port_out);
    int below = np.low > 1024 ? np.low - 1024 : 0, above = np.high < 65535 ? 65535 - np.high : 0,
        n = below + above;
    for (int k = 0, start = n > 0 ? (int)getpid() % n : 0; k < n && k < 4096; k++) {
        int i = (start + k) % n, p = i < below ? 1024 + i : np.high + 1 + (i - below);
        int fd = io_listen_on(host, p, backlog, port_out);
        if (fd >= 0 || (errno != EADDRINUSE && errno != EACCES))
            return fd;
    }
    return io_listen_on(host, 0, backlog, port_out);
}

static int io_listen_on(const char *host, int port, int backlog, int *port_out)
{
    struct sockaddr_in sa;
    char hp[96];
    snprintf(hp, sizeof hp, "%s:%d", host, port ? port : 1);
    if (parse_hostport(hp, &sa) < 0) {
        errno = EINVAL;
        return -1;
    }
    sa.sin_port = htons((uint16_t)port);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    socklen_t sl = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, backlog) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (port_out)
        *port_out = ntohs(sa.sin_port);
    return fd;
}

/* ---- I.11 Interface ---- */

/* What Parts II and III ask of the runtime beyond spawning, parking and the io_ calls:
 * starting and stopping it (rt_start, rt_shutdown, rt_join, and the stack overflow handler
 * they install), running a function on it (rt_run), its totals (vt_stats), spreading threads,
 * pinning and timed sleeps; which carrier the caller is, how many there are, which one
 * watches an fd, whether the caller is pinned, and whether an idle fd has something to read.
 * Parts II and III never read rt or carrier_self themselves. */

/* SIGSEGV on an alternate stack: a fault in a guard region is a virtual thread's stack
 * overflow; say so and abort. Any other fault goes to the previous handler. Only
 * async-signal-safe calls here. */
static void vt_segv_handler(int sig, siginfo_t *si, void *uctx)
{
    char *a = si->si_addr;
    for (int i = 0; i < rt.ncarriers * VT_STACKS; i++) {
        struct vt_stack *s = &rt.stacks[i];
        if (a >= s->map && a < s->lo) {
            static const char msg[] = "aggregator: virtual thread stack overflow (run stack is "
                                      "256 KiB; a frame hit the guard region)\n";
            if (write(2, msg, sizeof msg - 1) < 0) {
                /* nowhere to report it: we abort anyway */
            }
            signal(SIGABRT, SIG_DFL);
            abort();
        }
    }
    if (rt.old_segv.sa_flags & SA_SIGINFO && rt.old_segv.sa_sigaction) {
        rt.old_segv.sa_sigaction(sig, si, uctx);
        return;
    }
    signal(SIGSEGV, SIG_DFL); /* returning re-executes the fault, which now kills us */
}

static void vt_stack_init(struct vt_stack *s)
{
    size_t len = VT_GUARD + VT_RUN_STACK;
    s->map =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s->map == MAP_FAILED)
        die("mmap run stack: %s", strerror(errno));
    if (mprotect(s->map, VT_GUARD, PROT_NONE) < 0)
        die("mprotect guard: %s", strerror(errno));
    s->lo = s->map + VT_GUARD;
    s->hi = s->map + len;
    s->vg_id = VG_STACK_REGISTER(s->lo, s->hi);
}

static void carrier_init(struct carrier *c, int id)
{
    c->id = id;
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    c->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->epfd < 0 || c->wakefd < 0)
        die("epoll/eventfd: %s", strerror(errno));
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
    if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->wakefd, &ev) < 0)
        die("epoll_ctl: %s", strerror(errno));
    for (int i = 0; i < VT_STACKS; i++)
        vt_stack_init(&rt.stacks[id * VT_STACKS + i]);
    c->altstack = xmalloc(VT_ALTSTACK);
}

/* The carriers rt_start(n) starts: n, or for n <= 0 one per CPU, as the JDK does. */
static int rt_carriers_for(int n)
{
    if (n <= 0)
        n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* Start the runtime with n carriers (see rt_carriers_for). */
static void rt_start(int n)
{
    n = rt_carriers_for(n);
    raise_fd_limit();
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rt.io_cap = rl.rlim_cur > (1u << 20) ? (1 << 20) : (int)rl.rlim_cur;
    rt.io = xcalloc((size_t)rt.io_cap, sizeof *rt.io);
    rt.ncarriers = n;
    rt.carriers = xcalloc((size_t)n, sizeof *rt.carriers);
    rt.stacks = xcalloc((size_t)n * VT_STACKS, sizeof *rt.stacks);
    __atomic_store_n(&rt.shutdown, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < n; i++)
        carrier_init(&rt.carriers[i], i);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = vt_segv_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, &rt.old_segv);
    for (int i = 0; i < n; i++) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, 256 * 1024);
        if (pthread_create(&rt.carriers[i].thread, &at, carrier_main, &rt.carriers[i]))
            die("pthread_create carrier");
        pthread_attr_destroy(&at);
    }
}

/* Ask every carrier to cancel its parked threads and exit once none is left anywhere. */
static void rt_shutdown(void)
{
    __atomic_store_n(&rt.shutdown, 1, __ATOMIC_SEQ_CST);
    uint64_t one = 1;
    for (int i = 0; i < rt.ncarriers; i++)
        if (write(rt.carriers[i].wakefd, &one, sizeof one) < 0) {
            /* only EAGAIN (the counter is full): a wake-up is pending anyway */
        }
}

/* Wait for the carriers to exit (after rt_shutdown) and free the runtime. */
static void rt_join(void)
{
    for (int i = 0; i < rt.ncarriers; i++)
        pthread_join(rt.carriers[i].thread, NULL);
    sigaction(SIGSEGV, &rt.old_segv, NULL);
    for (int i = 0; i < rt.ncarriers; i++) {
        struct carrier *c = &rt.carriers[i];
        close(c->epfd);
        close(c->wakefd);
        rt.spawned += c->spawned; /* the totals outlive the carriers */
        rt.finished += c->finished;
        free(c->altstack);
        free(c->heap);
        while (c->cache) {
            struct vt *v = c->cache;
            c->cache = v->next;
            vt_free(v); /* carrier_self is NULL here: really freed */
        }
    }
    for (int i = 0; i < rt.ncarriers * VT_STACKS; i++) {
        VG_STACK_DEREGISTER(rt.stacks[i].vg_id);
        munmap(rt.stacks[i].map, VT_GUARD + VT_RUN_STACK);
    }
    free(rt.stacks);
    free(rt.carriers);
    free(rt.io);
    rt.carriers = NULL;
    rt.stacks = NULL;
    rt.io = NULL;
    rt.ncarriers = 0;
}

/* Totals over the carriers, for /metrics and the tests (racy snapshots, good enough). */
struct vt_stats {
    long alive, runnable, parked, busy;
    long pinned, pinned_blocked; /* inside vt_pin; of those, blocked in the kernel now */
    int carriers;
    uint64_t switches, steals, copied_bytes;
};

static struct vt_stats vt_stats(void)
{
    struct vt_stats total = {0};
    uint64_t s, f;
    rt_counts(&s, &f);
    total.alive = (long)(s - f);
    total.parked = LOAD(rt.parked);
    total.pinned = LOAD(rt.pinned);
    total.pinned_blocked = LOAD(rt.pinned_blocked);
    total.carriers = rt.ncarriers;
    for (int i = 0; i < rt.ncarriers; i++) {
        struct carrier *c = &rt.carriers[i];
        total.runnable += runq_len(c);
        total.parked += LOAD(c->parked);
        total.busy += LOAD(c->busy);
        total.switches += LOAD(c->runs);
        total.steals += LOAD(c->steals);
        total.copied_bytes += LOAD(c->copied_bytes);
    }
    return total;
}

/* Run fn(arg) on a virtual thread and block the calling OS thread until it returns: the
 * bridge from main (or a test) into the runtime. */
struct rt_call {
    void (*fn)(void *);
    void *arg;
    pthread_mutex_t mu; /* guards done */
    pthread_cond_t cv;
    int done;
};

static void rt_call_entry(void *p)
{
    struct rt_call *rc = p;
    rc->fn(rc->arg);
    pthread_mutex_lock(&rc->mu);
    rc->done = 1;
    pthread_cond_signal(&rc->cv);
    pthread_mutex_unlock(&rc->mu);
}

static void rt_run(void (*fn)(void *), void *arg)
{
    struct rt_call rc = {.fn = fn, .arg = arg, .done = 0};
    pthread_mutex_init(&rc.mu, NULL);
    pthread_cond_init(&rc.cv, NULL);
    /* &rc is on this OS thread's stack, which does not move: safe to share. */
    vt_spawn_on(&rt.carriers[0], rt_call_entry, &rc, VT_DETACHED);
    pthread_mutex_lock(&rc.mu);
    while (!rc.done)
        pthread_cond_wait(&rc.cv, &rc.mu);
    pthread_mutex_unlock(&rc.mu);
    pthread_cond_destroy(&rc.cv);
    pthread_mutex_destroy(&rc.mu);
}

/* Spread new threads over the carriers round-robin: stealing balances them later anyway,
 * this only saves the first steals. */
static struct vt *vt_spawn_spread(void (*fn)(void *), void *arg)
{
    unsigned i = SHARED_ADD(rt.next_carrier, 1) % (unsigned)rt.ncarriers;
    return vt_spawn_on(&rt.carriers[i], fn, arg, VT_DETACHED);
}

/* Pinning, as with `synchronized` in JDK 21: while pinned, a blocking call cannot park, so it
 * blocks the carrier itself and no other virtual thread runs on it meanwhile. */
static void vt_pin(void)
{
    struct vt *v = vt_current();
    if (v && v->pinned++ == 0)
        SHARED_ADD(rt.pinned, 1);
}

static void vt_unpin(void)
{
    struct vt *v = vt_current();
    if (v && --v->pinned == 0)
        SHARED_ADD(rt.pinned, -1);
}

/* Sleep until an absolute deadline (ns): a timed park, or a real sleep when pinned or when
 * not on a virtual thread. Returns -1 with ECANCELED if the runtime is shutting down. */
static int vt_sleep_until(int64_t deadline)
{
    struct vt *v = vt_current();
    if (v && !v->pinned) {
        while (now_ns() < deadline) /* a spurious wake-up parks again */
            if (vt_wait(-1, 0, deadline) < 0 && errno == ECANCELED)
                return -1;
        return 0;
    }
    struct timespec ts = {deadline / NS_PER_S, deadline % NS_PER_S};
    SHARED_ADD(rt.pinned_blocked, v ? 1 : 0);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        continue; /* a signal cut the sleep short: sleep on to the same deadline */
    SHARED_ADD(rt.pinned_blocked, v ? -1 : 0);
    return 0;
}

/* Cancel virtual thread v, as Thread.interrupt cancels a virtual thread's blocking I/O in Loom
 * (a thread parked in a socket read is unparked, the socket closed, and the read throws
 * "Closed by interrupt"): if v is parked in vt_wait it is woken now and its wait fails with
 * ECANCELED; if not, its next vt_wait fails so without parking, and so does every one after
 * (woke stays VT_WOKE_CANCEL until the descriptor is reused): a cancelled thread can only wind
 * down. Every carrier's plock is held while v is looked at, because v's park checks the mark
 * and registers under the plock of its fd's owner, which only v knows: so v has either
 * registered (wait_c set: woken here) or not yet checked (it sees the mark). The caller makes
 * sure v has not ended (its descriptor could be another thread's). */
static void vt_cancel(struct vt *v)
{
    for (int i = 0; i < rt.ncarriers; i++)
        spin_lock(&rt.carriers[i].plock); /* in carrier order; nobody holds two otherwise */
    struct carrier *wc = LOAD(v->wait_c);
    __atomic_store_n(&v->woke, VT_WOKE_CANCEL, __ATOMIC_RELAXED);
    for (int i = 0; i < rt.ncarriers; i++)
        if (&rt.carriers[i] != wc)
            spin_unlock(&rt.carriers[i].plock);
    if (wc) {
        vt_wake_locked(v, VT_WOKE_CANCEL);
        spin_unlock(&wc->plock);
    }
}

/* The number of carriers (0 before rt_start and after rt_join). */
static int rt_carriers(void)
{
    return rt.ncarriers;
}

/* The calling OS thread's carrier, 0 .. rt_carriers() - 1, or -1 off the carriers. */
static int rt_self(void)
{
    return carrier_self ? carrier_self->id : -1;
}

/* The carrier whose epoll watches fd, or -1 (not registered). */
static int io_home(int fd)
{
    struct carrier *o = rt.io && fd >= 0 && fd < rt.io_cap ? LOAD(rt.io[fd].owner) : NULL;
    return o ? o->id : -1;
}

/* Whether the caller is a virtual thread inside vt_pin. */
static int vt_pinned(void)
{
    struct vt *v = vt_current();
    return v && v->pinned;
}

/* A detached thread on carrier i. */
static void vt_spawn_detached_on(int i, void (*fn)(void *), void *arg)
{
    vt_spawn_on(&rt.carriers[i], fn, arg, VT_DETACHED);
}

/* How recent a harvest of the caller's epoll must be for io_quiet to trust an fd's readiness
 * instead of peeking (ns). It widens the window of the stale check (see io_quiet) by at most
 * this much: as long as a loopback request takes to reach the backend and be read there, a
 * window the peek has anyway. */
#ifndef IO_QUIET_NS
#define IO_QUIET_NS (50 * 1000)
#endif

/* Whether nothing has come on an idle fd since its last read: no bytes, no EOF. A peek
 * (recv MSG_PEEK, one syscall) answers it anywhere; a virtual thread on the fd's own carrier
 * asks the readiness first, which Go's pollDesc keeps for the same purpose. A clear
 * ready[VT_READ] says the last read was short, or EAGAIN, with no edge since; it cannot say
 * that bytes or a FIN arrived after the carrier last harvested its epoll (their edge waits in
 * the kernel's ready list). So the readiness is trusted only when that harvest is under
 * IO_QUIET_NS old; otherwise we harvest now (fast_harvest: an epoll_wait without waiting,
 * whose events are this carrier's work anyway, where an EAGAIN peek is a wasted syscall) and
 * look again. Platform threads, pinned ones, an fd of another carrier (a thread stolen since)
 * and a set ready flag peek. A quiet peek proves the fd drained, so the next read waits for
 * its edge first, with no EAGAIN read. */
static int io_quiet(int fd)
{
    char c;
    struct vt_io *io = io_watched(fd);
    struct carrier *self = carrier_self;
    if (io && LOAD(io->owner) == self && !LOAD(io->ready[VT_READ])) {
        if (now_ns() - self->polled_at > IO_QUIET_NS)
            fast_harvest(self);
        if (!LOAD(io->ready[VT_READ]))
            return 1;
    }
    unsigned seen = io_edges(io, VT_READ);
    int quiet = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN;
    if (quiet)
        io_drained(io, VT_READ, seen, 1);
    return quiet;
}

/* ==== Part II. The service ==== */

/* The two models, side by side.
 *   platform (1:1): like Tomcat's NIO connector. An acceptor/poller thread holds up to
 *   --max-connections connections and reads their requests as the bytes come; a whole
 *   request is queued to the executor, whose pool grows from --min-spare to --threads
 *   pthreads. A pool thread owns the request for the rest of its life, blocking in poll()
 *   on the downstream calls, so at most --threads requests are in progress: throughput is
 *   capped at threads / (K * D) however many users wait.
 *   virtual (M:N): like Loom. One virtual thread per connection (and per fanned-out call),
 *   scheduled on --carriers pthreads. A read that would block parks the virtual thread
 *   (the fd is registered with the carrier's epoll) and the carrier runs another one, so
 *   the number of requests in progress is bounded by memory, not by threads.
 *
 * The life of a request: GET /aggregate, from accept to response.
 *   virtual: vserver_acceptor, a virtual thread parked in io_accept, gets the connection,
 *     conn_new wraps it and vt_spawn_spread starts vconn_main for it on a carrier, where
 *     io_adopt registers the socket with that carrier's epoll. conn_serve_one ->
 *     conn_read_request -> io_rw: EAGAIN parks the thread in io_wait -> vt_wait -> vt_park
 *     until carrier_poll sees the bytes and calls vt_wake. http_parse_request, then the
 *     server's route, agg_route -> agg_aggregate, which runs agg_call_run K times in turn
 *     (agg_fan_out with ?parallel=1: one child thread per call, vt_spawn + vt_join). Each
 *     is ds_call: ds_take an idle connection from this carrier's pool (or client_open ->
 *     io_connect), client_exchange -> io_write_all, io_rw (parked again while the
 *     backend's backend_route waits D ms in vt_sleep_until), http_parse_response,
 *     ds_release. Back in agg_aggregate, http_write_response writes the JSON array;
 *     conn_serve_one sends it with io_write_all, counts it (metrics_request) and loops for
 *     the next request on the keep-alive connection.
 *   platform: pool_poller's epoll reports the listening socket: pool_accept takes the
 *     connection, io_adopt, conn_new, pool_watch (EPOLLONESHOT, a deadline). When it is
 *     readable, pool_readable -> conn_read_request reads without waiting; once the request
 *     is whole, pool_submit queues it (pool_grow adds a thread if none is idle) and a
 *     pool_thread takes it: conn_serve_one and everything below it as above, except that
 *     io_wait blocks the pthread in poll() instead of parking, ds_call shares one pool of
 *     connections, and agg_fan_out starts pthreads. Then pool_watch re-arms the connection
 *     (or pool_close drops it) and the thread takes the next task.
 *
 * The sections follow that path down: HTTP, the metrics every answer updates, connections,
 * the aggregate handler, the downstream call, the backend; then the two servers that accept.
 * Tests: tests/test_aggregator.c (test_http_* the parsers, test_alloc, test_integration both
 * servers in process), tests/test_faults.c (the process under bad backends and clients,
 * deadlines, the fd limit, the listeners, one client starving others), tests/fuzz_http.c
 * (make fuzz: both parsers), tests/floor.c
 * (the same answers without a runtime, checked by test_faults), tests/test_java.sh (the JVM
 * server keeps this one's contract). */

/* ---- II.1 HTTP ---- */

/* Limits. Anything larger is refused with the status in parentheses. */
#define HTTP_MAX_LINE      2048  /* request line (414) */
#define HTTP_MAX_HEAD      8192  /* request line + header lines + blank line (431) */
#define HTTP_MAX_HEADERS   32    /* header lines (431) */
#define HTTP_MAX_BODY      4096  /* request body (413) */
#define HTTP_MAX_RESP_BODY 16384 /* downstream response body (502) */

/* Status codes and reasons, one table (X-macro) for the writer and the metrics. */
#define HTTP_STATUSES(X)                                                                           \
    X(200, "OK")                                                                                   \
    X(400, "Bad Request")                                                                          \
    X(401, "Unauthorized")                                                                         \
    X(404, "Not Found")                                                                            \
    X(405, "Method Not Allowed")                                                                   \
    X(413, "Content Too Large")                                                                    \
    X(414, "URI Too Long")                                                                         \
    X(417, "Expectation Failed")                                                                   \
    X(431, "Request Header Fields Too Large")                                                      \
    X(500, "Internal Server Error")                                                                \
    X(501, "Not Implemented")                                                                      \
    X(502, "Bad Gateway")                                                                          \
    X(503, "Service Unavailable")                                                                  \
    X(504, "Gateway Timeout")                                                                      \
    X(505, "HTTP Version Not Supported")

static const int http_codes[] = {
#define X(code, reason) code,
    HTTP_STATUSES(X)
#undef X
};
static const char *const http_reasons[] = {
#define X(code, reason) reason,
    HTTP_STATUSES(X)
#undef X
};
#define HTTP_NSTATUS ((int)ARRAY_LEN(http_codes))

/* Index of a status in the table; unknown codes map to the last slot + 1 ("other"). */
static int http_status_index(int code)
{
    for (int i = 0; i < HTTP_NSTATUS; i++)
        if (http_codes[i] == code)
            return i;
    return HTTP_NSTATUS;
}

/* What the header lines say, for requests and responses alike. */
struct http_head {
    size_t content_length; /* Content-Length, 0 if absent */
    int has_length;        /* a Content-Length header was present */
    int chunked;           /* Transfer-Encoding present (we only do Content-Length) */
    int conn_close;        /* Connection: close */
    int conn_keep_alive;   /* Connection: keep-alive (HTTP/1.0) */
    int expect_continue;   /* Expect: 100-continue (the client waits for 100 before its body) */
    int expect_unmet;      /* Expect with anything else (417) */
    int nhost;             /* Host header lines (a request: exactly one in HTTP/1.1) */
    int nheaders;          /* header lines */
    int nauth;             /* Authorization header lines (serve --auth wants one) */
    const char *auth;      /* the last one's value, in the parsed buffer */
    size_t auth_len;
};

struct http_request {
    const char *method; /* points into the parsed buffer, not NUL-terminated */
    size_t method_len;
    const char *path; /* target up to '?' */
    size_t path_len;
    const char *query; /* after '?', or NULL */
    size_t query_len;
    int minor;       /* HTTP/1.minor */
    int keep_alive;  /* connection stays open after the answer */
    size_t head_len; /* bytes of request line and headers, blank line included (and any
                        empty lines before the request line) */
    size_t body_len; /* Content-Length */
    struct http_head h;
};

struct http_response {
    int status; /* three-digit code */
    int minor;
    int keep_alive;
    size_t head_len;  /* bytes of status line and headers, blank line included */
    const char *body; /* points into the parsed buffer */
    size_t body_len;
};

/* tchar from RFC 9110: the characters of a token (method, header name), 0-9 A-Z a-z and
 * !#$%&'*+-.^_`|~, as a bitmap of ASCII (bit c of word c / 64): a shift and a mask per
 * character, where a strchr in the list cost a call per punctuation or digit (callgrind). */
static const uint64_t http_tchar_bits[2] = {0x03ff6cfa00000000u, 0x57ffffffc7fffffeu};

static int http_is_tchar(unsigned char c)
{
    return c < 128 && (http_tchar_bits[c >> 6] >> (c & 63) & 1);
}

/* Whether a header value that is a list of tokens (Connection) has tok as one of its
 * elements, ignoring case and the whitespace around each (RFC 9110 5.6.1): "keep-alive, Close"
 * has "close"; "notclose" does not. */
static int http_list_has(const char *v, size_t n, const char *tok)
{
    size_t tl = strlen(tok);
    for (size_t i = 0; i < n;) {
        size_t end = i;
        while (end < n && v[end] != ',')
            end++;
        size_t a = i, b = end;
        while (a < b && (v[a] == ' ' || v[a] == '\t'))
            a++;
        while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
            b--;
        if (b - a == tl && !strncasecmp(v + a, tok, tl))
            return 1;
        i = end + 1;
    }
    return 0;
}

/* Parse the header lines in [p, end), each ending in CRLF; end is the blank line's CRLF.
 * Grammar: header = name ":" OWS value OWS CRLF, name = 1*tchar, value = no CTL but HTAB.
 * Returns 0 or the status to refuse with (400 malformed, 431 too many). */
static int http_parse_headers(const char *p, const char *end, struct http_head *h, int bad)
{
    memset(h, 0, sizeof *h);
    while (p < end) {
        const char *eol = memchr(p, '\r', (size_t)(end - p + 1));
        if (!eol || eol[1] != '\n')
            return bad;
        const char *colon = p;
        while (colon < eol && http_is_tchar((unsigned char)*colon))
            colon++;
        if (colon == p || colon == eol || *colon != ':')
            return bad; /* also obs-fold, spaces */
        if (++h->nheaders > HTTP_MAX_HEADERS)
            return 431;
        const char *v = colon + 1, *ve = eol;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        for (const char *cur = v; cur < ve; cur++)
            if (((unsigned char)*cur < 0x20 && *cur != '\t') || *cur == 0x7f)
                return bad;
        size_t nl = (size_t)(colon - p), vl = (size_t)(ve - v);
        if (nl == 14 && !strncasecmp(p, "content-length", 14)) {
            size_t n = 0;
            if (!vl || vl > 9)
                return bad;
            for (const char *cur = v; cur < ve; cur++) {
                if (*cur < '0' || *cur > '9')
                    return bad;
                n = n * 10 + (size_t)(*cur - '0');
            }
            if (h->has_length && n != h->content_length)
                return bad; /* smuggling guard */
            h->content_length = n;
            h->has_length = 1;
        } else if (nl == 17 && !strncasecmp(p, "transfer-encoding", 17)) {
            h->chunked = 1;
        } else if (nl == 10 && !strncasecmp(p, "connection", 10)) {
            h->conn_close |= http_list_has(v, vl, "close");
            h->conn_keep_alive |= http_list_has(v, vl, "keep-alive");
        } else if (nl == 4 && !strncasecmp(p, "host", 4)) {
            h->nhost++;
        } else if (nl == 13 && !strncasecmp(p, "authorization", 13)) {
            h->nauth++;
            h->auth = v;
            h->auth_len = vl;
        } else if (nl == 6 && !strncasecmp(p, "expect", 6)) {
            int only_continue = vl == 12 && !strncasecmp(v, "100-continue", 12);
            h->expect_continue |= only_continue;
            h->expect_unmet |= !only_continue;
        }
        p = eol + 2;
    }
    return 0;
}

/* The first CRLF in buf[0, n), or NULL. A memchr per CR: glibc's memmem prepares a search
 * at every call, and its three calls per message were a large share of the server's
 * user-space instructions in callgrind. */
static const char *http_find_crlf(const char *buf, size_t n)
{
    const char *end = buf + n;
    for (const char *p = buf; (p = memchr(p, '\r', (size_t)(end - p))); p++)
        if (end - p >= 2 && p[1] == '\n')
            return p;
    return NULL;
}

/* The first CRLF CRLF (the blank line ending a head) in buf[0, n), or NULL. */
static const char *http_find_blank_line(const char *buf, size_t n)
{
    const char *end = buf + n;
    for (const char *p = buf; (p = http_find_crlf(p, (size_t)(end - p))); p += 2)
        if (end - p >= 4 && p[2] == '\r' && p[3] == '\n')
            return p;
    return NULL;
}

/* Whether buf[0, n) holds a line feed without its carriage return, or a carriage return
 * followed by anything but a line feed (a CR in the last byte may still get its LF). */
static int http_bare_lf(const char *buf, size_t n)
{
    for (const char *p = buf; (p = memchr(p, '\n', n - (size_t)(p - buf))); p++)
        if (p == buf || p[-1] != '\r')
            return 1;
    for (const char *p = buf; (p = memchr(p, '\r', n - (size_t)(p - buf))); p++)
        if (p + 1 < buf + n && p[1] != '\n')
            return 1;
    return 0;
}

/* Find the end of the head (the blank line). Returns its length including CRLF CRLF, 0 if
 * not there yet, -1 if it cannot fit in max bytes, or -2 if a line of it ends in a bare LF
 * or holds a bare CR: such a head would never end in CRLF CRLF, and waiting for one would
 * turn a peer that speaks the wrong line ends into a timeout (RFC 9112 2.2 lets a recipient
 * refuse a bare LF, and has it refuse a bare CR or replace it). */
static long http_head_end(const char *buf, size_t len, size_t max)
{
    const char *e = http_find_blank_line(buf, len < max ? len : max);
    size_t n = e ? (size_t)(e - buf) + 4 : len < max ? len : max;
    if (http_bare_lf(buf, n))
        return -2;
    if (e)
        return (long)n;
    return len >= max ? -1 : 0;
}

/* http_parse_request, from the request line on. */
static long http_parse_from_request_line(const char *buf, size_t len, struct http_request *out)
{
    memset(out, 0, sizeof *out);
    const char *eol = http_find_crlf(buf, len < HTTP_MAX_LINE ? len : HTTP_MAX_LINE);
    if (!eol) { /* refuse binary junk, a bare CR (RFC 9112 2.2) included, early */
        for (size_t i = 0; i < len && i < HTTP_MAX_LINE; i++)
            if (((unsigned char)buf[i] < 0x20 && buf[i] != '\r') ||
                (buf[i] == '\r' && i + 1 < len && buf[i + 1] != '\n'))
                return -400;
        return len >= HTTP_MAX_LINE ? -414 : 0;
    }
    long head = http_head_end(buf, len, HTTP_MAX_HEAD);
    if (head < 0)
        return head == -2 ? -400 : -431;
    const char *p = buf, *sp1, *sp2;
    sp1 = p;
    while (sp1 < eol && http_is_tchar((unsigned char)*sp1))
        sp1++;
    if (sp1 == p || sp1 >= eol || *sp1 != ' ' || sp1 - p > 16)
        return -400;
    if (sp1[1] != '/')
        return -400;
    sp2 = sp1 + 1;
    while (sp2 < eol && (unsigned char)*sp2 > 0x20 && *sp2 != 0x7f)
        sp2++;
    if (sp2 >= eol || *sp2 != ' ')
        return -400;
    if (eol - sp2 != 9 || memcmp(sp2 + 1, "HTTP/1.", 7))
        return eol - sp2 == 9 && !memcmp(sp2 + 1, "HTTP/", 5) ? -505 : -400;
    if (sp2[8] != '0' && sp2[8] != '1')
        return -505;
    out->method = p;
    out->method_len = (size_t)(sp1 - p);
    out->path = sp1 + 1;
    const char *qmark = memchr(out->path, '?', (size_t)(sp2 - out->path));
    out->path_len = (size_t)((qmark ? qmark : sp2) - out->path);
    if (qmark) {
        out->query = qmark + 1;
        out->query_len = (size_t)(sp2 - qmark - 1);
    }
    out->minor = sp2[8] - '0';
    if (!head)
        return 0;
    int status = http_parse_headers(eol + 2, buf + head - 2, &out->h, 400);
    if (status)
        return -status;
    /* RFC 9112 3.2: a server MUST answer 400 to an HTTP/1.1 request without Host and to any
     * request with more than one (Tomcat does): which authority it names is otherwise
     * guesswork, and two are a smuggling or cache-poisoning attempt. */
    if (out->h.nhost > 1 || (out->minor == 1 && out->h.nhost != 1))
        return -400;
    if (out->h.chunked)
        return -501;
    if (out->h.expect_unmet)
        return -417;
    if (out->h.content_length > HTTP_MAX_BODY)
        return -413;
    out->head_len = (size_t)head;
    out->body_len = out->h.content_length;
    out->keep_alive = out->minor == 1 ? !out->h.conn_close : out->h.conn_keep_alive;
    return len >= out->head_len + out->body_len ? (long)(out->head_len + out->body_len) : 0;
}

/* Parse one request at the start of buf. Returns the bytes of the whole request (head and
 * body) when complete, 0 when more bytes are needed, or -status when it must be refused.
 *   request = *CRLF request-line headers CRLF body
 *   request-line = method SP target SP "HTTP/1." DIGIT CRLF
 *   method = 1*tchar, target = "/" *(VCHAR), then headers, CRLF, Content-Length body.
 * Empty lines before the request line are skipped (RFC 9112 2.2: some clients send a CRLF
 * after a body) and counted in head_len; HTTP_MAX_LINE bytes of them are refused (400).
 * Pure: it reads only buf[0..len) and writes only *out, so it can be fuzzed. */
static long http_parse_request(const char *buf, size_t len, struct http_request *out)
{
    size_t skip = 0;
    while (skip + 1 < len && skip < HTTP_MAX_LINE && buf[skip] == '\r' && buf[skip + 1] == '\n')
        skip += 2;
    if (skip >= HTTP_MAX_LINE)
        return -400;
    long r = http_parse_from_request_line(buf + skip, len - skip, out);
    if (out->head_len)
        out->head_len += skip;
    return r > 0 ? r + (long)skip : r;
}

/* Parse one response at the start of buf, with the same return convention (-502 for any
 * answer we cannot use: malformed, chunked, no length, too large).
 *   status-line = "HTTP/1." DIGIT SP 3DIGIT [SP reason] CRLF, then headers, CRLF, body. */
static long http_parse_response(const char *buf, size_t len, struct http_response *out)
{
    memset(out, 0, sizeof *out);
    long head = http_head_end(buf, len, HTTP_MAX_HEAD);
    if (head < 0)
        return -502;
    size_t have = len < 13 ? len : 13;
    if (memcmp(buf, "HTTP/1.", have < 7 ? have : 7))
        return -502;
    if (!head)
        return 0;
    const char *eol = http_find_crlf(buf, (size_t)head);
    if (eol - buf < 12 || (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ')
        return -502;
    for (int i = 9; i < 12; i++)
        if (buf[i] < '0' || buf[i] > '9')
            return -502;
    if (eol - buf > 12 && buf[12] != ' ')
        return -502;
    out->minor = buf[7] - '0';
    out->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    if (out->status < 100)
        return -502;
    struct http_head h;
    if (http_parse_headers(eol + 2, buf + head - 2, &h, 502))
        return -502;
    int bodiless = out->status < 200 || out->status == 204 || out->status == 304;
    if (h.chunked || (!h.has_length && !bodiless) || h.content_length > HTTP_MAX_RESP_BODY)
        return -502;
    out->head_len = (size_t)head;
    out->body_len = bodiless ? 0 : h.content_length;
    out->body = buf + head;
    out->keep_alive = out->minor == 1 ? !h.conn_close : h.conn_keep_alive;
    return len >= out->head_len + out->body_len ? (long)(out->head_len + out->body_len) : 0;
}

/* The final response at the start of buf, after any interim 1xx ones (100 Continue, 103
 * Early Hints): RFC 9110 15.2 has a client accept them even unasked, and skip them. Returns
 * as http_parse_response, the interim responses' bytes included in the length; out is the
 * final response. A 101 (Switching Protocols) was not asked for: -502. */
static long http_parse_final_response(const char *buf, size_t len, struct http_response *out)
{
    for (size_t off = 0;;) {
        long r = http_parse_response(buf + off, len - off, out);
        if (r <= 0 || out->status >= 200)
            return r > 0 ? r + (long)off : r;
        if (out->status == 101)
            return -502;
        off += (size_t)r;
    }
}

/* Append a response head for a body of n bytes to out; the caller appends the body. */
/* A response's head with the header lines `extra` (each ending in CRLF) among its own. */
static void http_write_head_with(struct sbuf *out, int status, const char *ctype, size_t n,
                                 int keep_alive, const char *extra)
{
    int i = http_status_index(status);
    sbuf_add_str(out, "HTTP/1.1 ");
    sbuf_add_ulong(out, (unsigned long)status);
    sbuf_add_str(out, " ");
    sbuf_add_str(out, i < HTTP_NSTATUS ? http_reasons[i] : "Unknown");
    sbuf_add_str(out, "\r\n");
    sbuf_add_str(out, extra);
    sbuf_add_str(out, "Content-Type: ");
    sbuf_add_str(out, ctype);
    sbuf_add_str(out, "\r\nContent-Length: ");
    sbuf_add_ulong(out, n);
    sbuf_add_str(out, keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
}

static void http_write_head(struct sbuf *out, int status, const char *ctype, size_t n,
                            int keep_alive)
{
    http_write_head_with(out, status, ctype, n, keep_alive, "");
}

/* Append a complete response (head and body) to out. */
static void http_write_response(struct sbuf *out, int status, const char *ctype, const char *body,
                                size_t n, int keep_alive)
{
    http_write_head(out, status, ctype, n, keep_alive);
    sbuf_add(out, body, n);
}

/* p[0, n) as a non-negative decimal number: 1 to 18 digits and nothing else (so it fits in
 * a long). Returns 0 with *v set, or -1. */
static int http_digits(const char *p, size_t n, long *v)
{
    if (n < 1 || n > 18)
        return -1;
    *v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        *v = *v * 10 + (p[i] - '0');
    }
    return 0;
}

/* A query parameter key=DIGITS: 1 with *v set, 0 if key is absent, -1 if its value is not a
 * number (a handler refuses that with 400 rather than guess). */
static int http_query_get(const char *query, size_t n, const char *key, long *v)
{
    size_t kl = strlen(key);
    for (size_t i = 0; query && i + kl < n; i++) {
        if ((i == 0 || query[i - 1] == '&') && !strncmp(query + i, key, kl) &&
            query[i + kl] == '=') {
            const char *val = query + i + kl + 1, *amp = memchr(val, '&', n - i - kl - 1);
            size_t vl = amp ? (size_t)(amp - val) : n - i - kl - 1;
            return http_digits(val, vl, v) == 0 ? 1 : -1;
        }
    }
    return 0;
}

/* The value of a query parameter as a non-negative integer, or def if absent or invalid. */
static long http_query_int(const char *query, size_t n, const char *key, long def)
{
    long v;
    return http_query_get(query, n, key, &v) == 1 ? v : def;
}

/* ---- II.2 Metrics ---- */

/* Latency histogram bounds for /metrics, in ms (Prometheus wants seconds; we print both):
 * ten a decade, the R10 preferred numbers (ISO 3), each at most 28% above the last, so a
 * quantile read from the histogram (bench's server_p99_ms) is known to within its bucket. */
static const double metrics_le_ms[] = {
    1,   1.25, 1.6,  2,    2.5,  3.15, 4,    5,    6.3,  8,    10,   12.5, 16,   20,
    25,  31.5, 40,   50,   63,   80,   100,  125,  160,  200,  250,  315,  400,  500,
    630, 800,  1000, 1250, 1600, 2000, 2500, 3150, 4000, 5000, 6300, 8000, 10000};
#define METRICS_NLE ((int)ARRAY_LEN(metrics_le_ms))

/* Why a downstream call failed: one table for the counters, /metrics' reason label and the
 * server's log line. no_port is the ephemeral-port wall: connect() got EADDRNOTAVAIL because
 * every local port to the backend is taken, most of them by TIME_WAIT (60 s each on Linux)
 * after calls that closed first (--no-pool --close-first client). */
#define DS_FAILURES(X)                                                                             \
    X(DS_FAIL_NO_PORT, "no_port", "downstream connect: ephemeral ports exhausted (EADDRNOTAVAIL)") \
    X(DS_FAIL_TIMEOUT, "timeout", "downstream call: timed out")                                    \
    X(DS_FAIL_REFUSED, "refused", "downstream connect: refused (ECONNREFUSED)")                    \
    X(DS_FAIL_BAD, "bad_response", "downstream call: no answer, a bad one, or not 200")            \
    X(DS_FAIL_OTHER, "other", "downstream call failed")

enum ds_fail {
#define X(e, label, message) e,
    DS_FAILURES(X)
#undef X
        DS_NFAIL
};
static const char *const ds_fail_labels[] = {
#define X(e, label, message) label,
    DS_FAILURES(X)
#undef X
};
static const char *const ds_fail_messages[] = {
#define X(e, label, message) message,
    DS_FAILURES(X)
#undef X
};

/* Process-wide counters, updated with relaxed atomic adds from any thread. */
struct metrics {
    uint64_t requests[HTTP_NSTATUS + 1]; /* answered requests by status index (last: other) */
    uint64_t lat_le[METRICS_NLE + 1];    /* requests with latency <= le (cumulated at print) */
    uint64_t lat_sum_us;                 /* sum of latencies, µs */
    uint64_t ds_calls;                   /* downstream calls made */
    uint64_t ds_opened;                  /* downstream connections opened */
    uint64_t ds_held_us;                 /* µs calls held a connection (ds_held) */
    uint64_t ds_cancelled;               /* downstream calls cancelled (not failures) */
    uint64_t ds_failed[DS_NFAIL];        /* downstream calls failed, by reason */
    uint64_t req_no_port;                /* requests failed: a call found no port (no_port) */
    uint64_t ds_unlogged[DS_NFAIL];      /* of those, not yet in a log line (ds_failed) */
    int64_t ds_log_next[DS_NFAIL];       /* ns: a reason's next log line not before then */
    long conns;                          /* client connections open now */
    long pool_size;                      /* platform: pool threads alive */
    long pool_busy;                      /* platform: pool threads serving a request */
    long pool_queue;                     /* platform: requests waiting for a pool thread */
    int64_t tw_at;                       /* ns: when tw_count was walked (0: never) */
    long tw_count;                       /* TIME_WAIT sockets then (metrics_time_wait) */
};

/* The process's counters: the service's one global, beside the runtime's rt. */
static struct metrics *metrics_counters;

/* Allocate the counters; call once from the main thread before any server starts. */
static struct metrics *metrics_init(void)
{
    if (!metrics_counters)
        metrics_counters = xcalloc(1, sizeof *metrics_counters);
    return metrics_counters;
}

static void metrics_request(int status, int64_t ns)
{
    struct metrics *m = metrics_counters;
    SHARED_ADD(m->requests[http_status_index(status)], 1);
    int i = 0;
    while (i < METRICS_NLE && (double)ns > metrics_le_ms[i] * NS_PER_MS)
        i++;
    SHARED_ADD(m->lat_le[i], 1);
    SHARED_ADD(m->lat_sum_us, (uint64_t)(ns / 1000));
}

/* TCP sockets in TIME_WAIT for /metrics, walked at most once a second and shared by every
 * scrape in that second. The walk reads the whole of /proc/net/tcp (tens of ms with tens of
 * thousands of sockets), on a carrier that runs other threads too: paid on every scrape, a
 * client asking for /metrics in a loop would make every other client pay it. The first
 * scrape past the second claims the walk (a compare-and-swap on tw_at); the others meanwhile
 * answer the previous count. */
static long metrics_time_wait(void)
{
    struct metrics *m = metrics_counters;
    int64_t now = now_ns(), at = LOAD(m->tw_at);
    if ((at == 0 || now - at >= NS_PER_S) &&
        __atomic_compare_exchange_n(&m->tw_at, &at, now, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        __atomic_store_n(&m->tw_count, proc_count_time_wait(0, 65535), __ATOMIC_RELEASE);
    return __atomic_load_n(&m->tw_count, __ATOMIC_ACQUIRE);
}

/* The Prometheus text exposition format (version 0.0.4). */
static void metrics_page(struct sbuf *b)
{
    struct metrics *m = metrics_counters;
    struct vt_stats threads = vt_stats();
    uint64_t cum = 0;
    sbuf_printf(b, "# HELP agg_requests_total Requests answered, by status.\n"
                   "# TYPE agg_requests_total counter\n");
    for (int i = 0; i <= HTTP_NSTATUS; i++) {
        uint64_t n = LOAD(m->requests[i]);
        if (i < HTTP_NSTATUS)
            sbuf_printf(b, "agg_requests_total{status=\"%d\"} %llu\n", http_codes[i],
                        (unsigned long long)n);
        else
            sbuf_printf(b, "agg_requests_total{status=\"other\"} %llu\n", (unsigned long long)n);
    }
    sbuf_printf(
        b,
        "# HELP agg_request_seconds Server-side latency.\n# TYPE agg_request_seconds histogram\n");
    for (int i = 0; i < METRICS_NLE; i++) {
        cum += LOAD(m->lat_le[i]);
        sbuf_printf(b, "agg_request_seconds_bucket{le=\"%g\"} %llu\n", metrics_le_ms[i] / 1000,
                    (unsigned long long)cum);
    }
    cum += LOAD(m->lat_le[METRICS_NLE]);
    sbuf_printf(b, "agg_request_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    sbuf_printf(b, "agg_request_seconds_sum %.6f\nagg_request_seconds_count %llu\n",
                LOAD(m->lat_sum_us) / 1e6, (unsigned long long)cum);
    struct {
        const char *name, *help;
        double v;
    } g[] = {
        {"agg_os_threads", "OS threads of the process", (double)proc_status_field(0, "Threads")},
        {"agg_rss_bytes", "resident set size", (double)proc_rss_bytes()},
        {"agg_open_fds", "open file descriptors", (double)proc_count_dir("/proc/self/fd")},
        {"agg_tcp_time_wait", "TCP sockets in TIME_WAIT, whole machine",
         (double)metrics_time_wait()},
        {"agg_connections", "client connections open", (double)LOAD(m->conns)},
        {"agg_pool_size", "platform pool threads", (double)LOAD(m->pool_size)},
        {"agg_pool_busy", "platform pool threads serving a request", (double)LOAD(m->pool_busy)},
        {"agg_pool_queue", "requests queued for a pool thread", (double)LOAD(m->pool_queue)},
        {"agg_vthreads_alive", "virtual threads alive", (double)threads.alive},
        {"agg_vthreads_runnable", "virtual threads runnable", (double)threads.runnable},
        {"agg_vthreads_parked", "virtual threads parked", (double)threads.parked},
        {"agg_vthreads_pinned", "virtual threads pinned (inside vt_pin)", (double)threads.pinned},
        {"agg_vthreads_pinned_blocked", "pinned virtual threads blocking their carrier",
         (double)threads.pinned_blocked},
        {"agg_carriers", "carrier threads", (double)threads.carriers},
        {"agg_carriers_busy", "carriers running a virtual thread", (double)threads.busy},
        {"agg_context_switches_total", "switches into virtual threads", (double)threads.switches},
        {"agg_stack_copied_bytes_total", "stack bytes copied by parking",
         (double)threads.copied_bytes},
        {"agg_downstream_calls_total", "downstream calls", (double)LOAD(m->ds_calls)},
        {"agg_downstream_connections_opened_total", "downstream connections opened",
         (double)LOAD(m->ds_opened)},
        {"agg_downstream_held_us_total",
         "microseconds downstream calls held a connection, from its connect or its checkout "
         "from the pool to its close or return, cancelled calls included",
         (double)LOAD(m->ds_held_us)},
        {"agg_downstream_cancelled_total",
         "downstream calls cancelled by a failing sibling (--on-failure cancel), not failures",
         (double)LOAD(m->ds_cancelled)},
        {"agg_requests_failed_no_port_total",
         "requests failed because a downstream call found no ephemeral port (once per request, "
         "however many of its calls did)",
         (double)LOAD(m->req_no_port)},
        {"agg_alloc_bytes_total", "bytes allocated since the start (xmalloc, xcalloc, xrealloc)",
         (double)alloc_total()},
    };
    for (size_t i = 0; i < ARRAY_LEN(g); i++)
        sbuf_printf(b, "# HELP %s %s.\n# TYPE %s %s\n%s %.0f\n", g[i].name, g[i].help, g[i].name,
                    strstr(g[i].name, "_total") ? "counter" : "gauge", g[i].name, g[i].v);
    sbuf_printf(b, "# HELP agg_downstream_failures_total Downstream calls failed, by reason "
                   "(no_port: connect() got EADDRNOTAVAIL, the ephemeral ports exhausted).\n"
                   "# TYPE agg_downstream_failures_total counter\n");
    for (int r = 0; r < DS_NFAIL; r++)
        sbuf_printf(b, "agg_downstream_failures_total{reason=\"%s\"} %llu\n", ds_fail_labels[r],
                    (unsigned long long)LOAD(m->ds_failed[r]));
}

/* ---- II.3 Connections ---- */

/* Everything the command line sets, read-only once serving. Times in ms. */
struct config {
    int mode;                     /* MODE_PLATFORM or MODE_VIRTUAL */
    const char *host;             /* address to bind (127.0.0.1) */
    int port;                     /* port to bind (0: any; the real one lands in server.port) */
    struct sockaddr_in *backends; /* downstream services; call i goes to backends[i % n] */
    int nbackends;
    int fanout;              /* K: downstream calls per /aggregate */
    int threads;             /* platform: most pool threads (Tomcat maxThreads) */
    int min_spare;           /* platform: pool threads started up front (minSpareThreads) */
    int max_connections;     /* connections held at most, both modes (maxConnections) */
    int accept_count;        /* listen backlog (acceptCount) */
    int max_queue;           /* platform: queued requests before 503 (0: unbounded) */
    int carriers;            /* virtual: carrier threads (0: one per CPU) */
    int pool;                /* 1: keep-alive downstream connection pool; 0: --no-pool */
    int close_first;         /* --no-pool: CLOSE_CLIENT (we close) or CLOSE_SERVER (it does) */
    int pool_max_idle;       /* idle downstream connections kept per backend */
    int pool_idle_ms;        /* a downstream connection idle this long is closed */
    int pin;                 /* 1: hold the carrier across downstream calls (--pin) */
    int timeout_ms;          /* downstream call timeout (504 after it) */
    int idle_ms;             /* keep-alive idle timeout for client connections */
    int write_ms;            /* a response's write deadline (at most idle_ms): a slow reader */
    int max_per_client;      /* connections one client address may hold (0: no limit; -1:
                              * three quarters of max_connections, server_start) */
    int thread_idle_ms;      /* platform: an idle pool thread exits after this (maxIdleTime) */
    int delay_ms, jitter_ms; /* backend: answer delay and its random spread */
    int on_failure;          /* ON_FAILURE_CANCEL or ON_FAILURE_WAIT: the fan-out's policy */
    double fail_share;       /* backend: share of the calls answered 500 (backend_fails) */
    int fail_after_ms;       /* backend: ... after this many ms instead of the delay */
    const struct auth *auth; /* --auth: the bearer token /aggregate wants (II.9), or NULL */
};

enum { MODE_PLATFORM, MODE_VIRTUAL };

/* --on-failure: what a fan-out does when one of its calls fails (agg_fan_out). */
enum { ON_FAILURE_CANCEL, ON_FAILURE_WAIT };
static const char *const on_failure_names[] = {"cancel", "wait"};

/* --no-pool: which side of a downstream connection closes it first, and so holds its
 * TIME_WAIT for 60 s. */
enum { CLOSE_CLIENT, CLOSE_SERVER };
static const char *const close_first_names[] = {"client", "server"};

/* The index of name in names[0, n) into *out (a flag's word: close_first_names, ...); -1
 * for anything else. */
static int names_find(const char *const *names, size_t n, const char *name, int *out)
{
    for (int i = 0; i < (int)n; i++)
        if (!strcmp(name, names[i])) {
            *out = i;
            return 0;
        }
    return -1;
}

static void config_defaults(struct config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->mode = MODE_VIRTUAL;
    cfg->host = "127.0.0.1";
    cfg->fanout = 3;
    cfg->threads = 200;
    cfg->min_spare = 10;
    cfg->max_connections = 8192;
    cfg->accept_count = 100;
    cfg->pool = 1;
    /* Enough for every platform thread's call to find a warm connection (a cap that binds
     * under load only churns connections and burns ports), and closed before the backend's
     * own keep-alive timeout (20 s by default here and in Tomcat) would close them under us. */
    cfg->pool_max_idle = 256;
    cfg->pool_idle_ms = 15000;
    cfg->timeout_ms = 5000;
    cfg->idle_ms = 20000;
    /* Tomcat's connectionTimeout (20 s) bounds a blocked write as it bounds a read, so 250
     * clients that pipeline requests and never read the answers hold 200 pool threads for
     * 20 s each, over and over. A response here is a few KiB that any live client takes in
     * well under a second: a write that cannot finish within 2 s is a client not reading. */
    cfg->write_ms = 2000;
    cfg->max_per_client = -1;
    cfg->thread_idle_ms = 60000;
}

/* Parse "H:P,H:P" into cfg->backends. Returns 0 or -1. */
static int config_backends(struct config *cfg, const char *list)
{
    char *copy = strdup(list), *save = NULL;
    int ok = 1;
    for (char *t = strtok_r(copy, ",", &save); t && ok; t = strtok_r(NULL, ",", &save)) {
        cfg->backends =
            xrealloc(cfg->backends, (size_t)(cfg->nbackends + 1) * sizeof *cfg->backends);
        ok = parse_hostport(t, &cfg->backends[cfg->nbackends++]) == 0;
    }
    free(copy);
    return ok && cfg->nbackends > 0 ? 0 : -1;
}

struct server;
struct conn;
/* A route handler appends a whole response to out and returns its status. */
typedef int (*route_fn)(struct server *s, struct http_request *rq, struct sbuf *out,
                        int keep_alive);

struct ds_pool;
struct pool;

/* Connections held by one client address (IPv4, network order): a chained hash's node. */
struct addr_count {
    uint32_t addr;
    int n;
    struct addr_count *next;
};
#define ADDR_NB 256 /* buckets */

struct server {
    const struct config *cfg;
    route_fn route;             /* agg_route or backend_route */
    int lfd;                    /* listening socket (virtual: carrier 0's, see vserver_listener) */
    int port;                   /* the port bound */
    struct ds_pool *pools;      /* downstream pools, [slot * nbackends + backend] */
    int npool_slots;            /* one slot per carrier (virtual) or a single shared one */
    int pool_slot_cap;          /* idle connections kept per pool: pool_max_idle over the slots */
    struct pool *pool;          /* platform mode's connector and executor */
    uint64_t seed;              /* backend jitter: xorshift state (per server, racy is fine) */
    uint64_t item_calls;        /* backend: /item calls so far (atomic), backend_fails' index */
    long vconns;                /* virtual mode: connections held (atomic) */
    int per_client;             /* connections one address may hold (0: no limit) */
    struct ds_backoff *backoff; /* per backend: refused connects back off (ds_call) */
    pthread_mutex_t addr_mu;    /* guards addr_buckets (held briefly, no park) */
    struct addr_count *addr_buckets[ADDR_NB]; /* connections held per client address */
};

/* A client connection: the read buffer keeps bytes past one request (pipelining). */
#define CONN_BUF (HTTP_MAX_HEAD + HTTP_MAX_BODY)
struct conn {
    int fd;
    struct server *srv;
    char *buf;       /* CONN_BUF bytes */
    size_t len;      /* bytes in buf not yet consumed */
    struct sbuf out; /* response being written */
    int continued;   /* 100 Continue sent for the request being read */
    uint32_t addr;   /* the client's IPv4 address, network order; counted if `counted` */
    int counted;     /* 1: held in srv->addr_buckets (server_admit) */
    /* platform only, owned by whoever holds the connection (poller, queue, pool thread) */
    struct conn *next;                    /* executor queue */
    struct conn *watch_prev, *watch_next; /* the poller's watch list, by deadline */
    int64_t deadline; /* ns: closed then by the poller unless a whole request has come */
    int handoff;      /* released by the thread that re-arms it, acquired by the poller */
};

/* When accept fails for want of fds (EMFILE, ENFILE) or memory, both servers stop accepting
 * this long: the backlog stays readable, so retrying at once would spin a core. */
#define ACCEPT_BACKOFF_MS 10

/* The connections one client address holds: find its node (or make one, with `make`) in
 * the server's table. The caller holds s->addr_mu. */
static struct addr_count **addr_slot(struct server *s, uint32_t addr)
{
    struct addr_count **at = &s->addr_buckets[(addr * 2654435761u) >> 24 & (ADDR_NB - 1)];
    while (*at && (*at)->addr != addr)
        at = &(*at)->next;
    return at;
}

/* Whether a new connection may stay: its address holds fewer than --max-per-client (counted
 * then, on *addr, until conn_free). Tomcat has no such limit: its maxConnections (here
 * --max-connections) is one count for everyone, so one address holding that many idle or
 * dripping connections (each kept until connectionTimeout) leaves every other client in the
 * backlog. A limit per address keeps the rest of the connections for the others; its default,
 * three quarters of --max-connections, lets a load generator's users (every one from
 * 127.0.0.1) hold as many connections as before up to that, and bench, which measures one
 * such client by design, lifts it (--max-per-client 0). Returns 0, or -1: close it at once. */
static int server_admit(struct server *s, int fd, uint32_t *addr, int *counted)
{
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    *counted = 0;
    if (!s->per_client || getpeername(fd, (struct sockaddr *)&peer, &len) < 0 ||
        peer.sin_family != AF_INET)
        return 0;
    *addr = peer.sin_addr.s_addr;
    pthread_mutex_lock(&s->addr_mu);
    struct addr_count **at = addr_slot(s, *addr);
    int ok = !*at || (*at)->n < s->per_client;
    if (ok && !*at) {
        *at = xcalloc(1, sizeof **at);
        (*at)->addr = *addr;
    }
    if (ok)
        (*at)->n++;
    pthread_mutex_unlock(&s->addr_mu);
    *counted = ok;
    return ok ? 0 : -1;
}

/* A counted connection closes: its address holds one fewer (the node goes at zero). */
static void server_release(struct server *s, uint32_t addr)
{
    pthread_mutex_lock(&s->addr_mu);
    struct addr_count **at = addr_slot(s, addr), *node = *at;
    if (node && --node->n == 0) {
        *at = node->next;
        free(node);
    }
    pthread_mutex_unlock(&s->addr_mu);
}

static struct conn *conn_new(struct server *s, int fd)
{
    struct conn *conn = xcalloc(1, sizeof *conn);
    conn->fd = fd;
    conn->srv = s;
    conn->buf = xmalloc(CONN_BUF);
    SHARED_ADD(metrics_counters->conns, 1);
    return conn;
}

static void conn_free(struct conn *conn)
{
    if (conn->counted)
        server_release(conn->srv, conn->addr);
    io_close(conn->fd);
    SHARED_ADD(metrics_counters->conns, -1);
    sbuf_free(&conn->out);
    free(conn->buf);
    free(conn);
}

/* Expect: 100-continue (RFC 9110 10.1.1): the client holds its body back until we say go, so
 * say it once the head is in and the body is not; silence would leave it waiting until a
 * timeout (ours or its own). An HTTP/1.0 client gets none: the RFC says to ignore it there.
 * Returns 0, or -1 if the write failed (or, with deadline 0, would have had to wait). */
static int conn_send_continue(struct conn *conn, const struct http_request *rq, int64_t deadline)
{
    static const char go[] = "HTTP/1.1 100 Continue\r\n\r\n";
    if (!rq->head_len || !rq->h.expect_continue || rq->minor != 1 || conn->continued)
        return 0;
    conn->continued = 1;
    return io_write_all(conn->fd, go, sizeof go - 1, deadline);
}

/* conn_read_request's outcomes besides a request (> 0) and a refusal (-status, <= -400). */
enum { CONN_WAIT = 0, CONN_GONE = -1 };

/* Read until one whole request is buffered, waiting until the deadline at most (0: not at
 * all, the platform poller's non-blocking step). Returns its length (> 0), -status for a
 * request to refuse, CONN_WAIT if it is still incomplete at the deadline, or CONN_GONE if the
 * peer closed or the connection failed. */
static long conn_read_request(struct conn *conn, struct http_request *rq, int64_t deadline)
{
    for (;;) {
        long r = http_parse_request(conn->buf, conn->len, rq);
        if (r != 0)
            return r;
        if (conn->len == CONN_BUF)
            return -431;
        if (conn_send_continue(conn, rq, deadline) < 0)
            return CONN_GONE;
        ssize_t n = io_rw(conn->fd, VT_READ, conn->buf + conn->len, CONN_BUF - conn->len, deadline);
        if (n <= 0)
            return n < 0 && errno == ETIMEDOUT ? CONN_WAIT : CONN_GONE;
        conn->len += (size_t)n;
    }
}

/* Whether a whole request (or one to refuse) is buffered: conn_serve_one needs no read. */
static int conn_request_buffered(struct conn *conn)
{
    struct http_request rq;
    return conn->len == CONN_BUF || http_parse_request(conn->buf, conn->len, &rq) != 0;
}

/* Serve one request: read it, route it, write the answer. Returns 1 to keep the connection
 * (HTTP/1.1 keep-alive), 0 to close it. Shared by every server and both models. */
static int conn_serve_one(struct conn *conn)
{
    struct http_request rq;
    /* the request's bytes, -status (refused), or CONN_WAIT or CONN_GONE: close */
    long request_len =
        conn_read_request(conn, &rq, now_ns() + (int64_t)conn->srv->cfg->idle_ms * NS_PER_MS);
    if (request_len == CONN_WAIT || request_len == CONN_GONE)
        return 0;
    int64_t t0 = now_ns();
    int status, keep = request_len > 0 && rq.keep_alive;
    conn->out.len = 0;
    if (request_len < 0) {
        status = (int)-request_len;
        const char *reason = http_reasons[http_status_index(status)];
        http_write_response(&conn->out, status, "text/plain", reason, strlen(reason), 0);
    } else {
        status = conn->srv->route(conn->srv, &rq, &conn->out, keep);
    }
    const struct config *cfg = conn->srv->cfg; /* a slow reader holds a thread write_ms at most */
    int write_ms = cfg->write_ms < cfg->idle_ms ? cfg->write_ms : cfg->idle_ms;
    int ok = io_write_all(conn->fd, conn->out.p, conn->out.len,
                          now_ns() + (int64_t)write_ms * NS_PER_MS) == 0;
    metrics_request(status, now_ns() - t0);
    if (request_len > 0) {
        memmove(conn->buf, conn->buf + request_len, conn->len - (size_t)request_len);
        conn->len -= (size_t)request_len;
    }
    conn->continued = 0;
    return keep && ok;
}

/* Part II follows a request down, so the handler (II.4) comes before the call it makes (II.5).
 * ds_call's status, or DS_CANCELLED: the call was cancelled (vt_cancel) before its answer. */
enum { DS_CANCELLED = -1 };
static int ds_cancelled(void);
static int ds_call(struct server *s, int backend, int item, struct sbuf *out, int64_t deadline,
                   int *why);

/* ---- II.4 Aggregate ---- */

/* The most downstream calls per request (--fanout). Each call holds a connection, a buffer
 * of CLIENT_BUF bytes and, fanned out, a thread: a bound keeps one request from asking for
 * more than a server can give, and no aggregate in the lab calls anywhere near it. */
#define AGG_MAX_FANOUT 1000

/* One downstream call of an /aggregate request. Heap-allocated: with ?parallel=1 a child
 * virtual thread fills it in while the parent is parked (and its stack copied away). */
struct agg_call {
    struct server *s;
    int item;                /* /item/<item>, sent to backends[item % nbackends] */
    int64_t deadline;        /* ns */
    int status;              /* 200, 502, 504, DS_CANCELLED, or 0 (not made) */
    int why;                 /* a failed connect's DS_FAIL_ reason, else -1 */
    struct sbuf body;        /* the backend's answer */
    struct agg_scope *scope; /* the fan-out it runs in (virtual mode), or NULL */
    struct vt *vt;           /* its child thread there (guarded by scope->lock) */
    int ended;               /* its child is past its call (guarded by scope->lock) */
};

/* A virtual-mode fan-out's scope: JDK 25's StructuredTaskScope.open() with a joiner that
 * stops at the first failure (Joiner.awaitAllSuccessfulOrThrow). The parent forks one child
 * per call and joins every one; with --on-failure cancel the first child whose call fails
 * cancels the siblings still in theirs (vt_cancel: what the scope's shutdown does in Loom, a
 * Thread.interrupt of each, whose parked socket read then fails, "Closed by interrupt").
 * A cancelled child closes its connection (ds_call: a half-read one never goes back to the
 * pool) and ends; the parent returns only once every child has ended, so no child outlives
 * its scope, and answers 502 at once instead of after the slowest sibling. */
struct agg_scope {
    int lock;   /* spinlock: held briefly, never across a park */
    int failed; /* a call failed: siblings not yet started skip theirs */
    int cancel; /* the policy: cancel the siblings on the first failure */
    struct agg_call *calls;
    int k;
};

static void agg_call_run(void *arg)
{
    struct agg_call *a = arg;
    a->status =
        ds_call(a->s, a->item % a->s->cfg->nbackends, a->item, &a->body, a->deadline, &a->why);
}

/* The first failure in a scope cancels every sibling still in its call (under the lock: a
 * child past its call has ended it, and its descriptor may be reused once joined). */
static void agg_scope_failed(struct agg_scope *sc, const struct agg_call *self)
{
    sc->failed = 1;
    for (int i = 0; sc->cancel && i < sc->k; i++)
        if (&sc->calls[i] != self && sc->calls[i].vt && !sc->calls[i].ended)
            vt_cancel(sc->calls[i].vt);
}

/* A child of the scope: its call, unless a sibling failed before it began. */
static void agg_call_scoped(void *arg)
{
    struct agg_call *a = arg;
    struct agg_scope *sc = a->scope;
    spin_lock(&sc->lock);
    int skip = sc->failed && sc->cancel;
    spin_unlock(&sc->lock);
    if (skip)
        a->status = ds_cancelled();
    else
        agg_call_run(a);
    spin_lock(&sc->lock);
    a->ended = 1;
    if (a->status != 200 && a->status != DS_CANCELLED && !sc->failed)
        agg_scope_failed(sc, a);
    spin_unlock(&sc->lock);
}

/* Fork the k children and join them all (the parent parks in each join; a child's failure
 * cancels the rest, which end quickly, so the joins then take no longer). */
static void agg_scope_run(struct agg_call *calls, int k, int cancel)
{
    /* on the heap, as the calls are: the parent's frames are copied away while it parks in
     * a join, and its run stack is another thread's meanwhile */
    struct agg_scope *sc = xcalloc(1, sizeof *sc);
    *sc = (struct agg_scope){.cancel = cancel, .calls = calls, .k = k};
    for (int i = 0; i < k; i++) {
        calls[i].scope = sc;
        spin_lock(&sc->lock); /* a failing sibling sees this child's thread, or it sees failed */
        calls[i].vt = vt_spawn(agg_call_scoped, &calls[i], VT_JOINABLE);
        spin_unlock(&sc->lock);
    }
    for (int i = 0; i < k; i++)
        vt_join(calls[i].vt);
    free(sc);
}

static void *agg_call_pthread(void *arg)
{
    agg_call_run(arg);
    return NULL;
}

/* Run the k calls concurrently and return when all are done: structured concurrency, like
 * Java's StructuredTaskScope. Children are virtual threads on this carrier (agg_scope_run,
 * which with --on-failure cancel cancels the siblings of a failed call), or, on a platform
 * thread, one pthread each (what a fixed pool would have to do, a pthread_create and a join
 * per call). Platform mode always waits for every call: a pool thread blocked in a socket
 * read is not woken by Future.cancel(true), whose Thread.interrupt does not end a blocking
 * read of a java.net.Socket on a platform thread, so there cancel behaves as wait. */
static void agg_fan_out(struct agg_call *calls, int k, int on_failure)
{
    if (vt_current()) {
        agg_scope_run(calls, k, on_failure == ON_FAILURE_CANCEL);
        return;
    }
    pthread_t *t = xcalloc((size_t)k, sizeof *t);
    int *started = xcalloc((size_t)k, sizeof *started);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    for (int i = 0; i < k; i++) {
        started[i] = pthread_create(&t[i], &at, agg_call_pthread, &calls[i]) == 0;
        if (!started[i])
            agg_call_run(&calls[i]); /* out of threads: do it ourselves */
    }
    for (int i = 0; i < k; i++)
        if (started[i])
            pthread_join(t[i], NULL);
    pthread_attr_destroy(&at);
    free(started);
    free(t);
}

/* The 200 response: the answers as a JSON array, each body copied once, from its call's
 * buffer into out (the head's Content-Length is summed first, so no array is built apart:
 * that was a malloc, a realloc and a second copy of every body per request). */
static void agg_write_array(struct sbuf *out, const struct agg_call *calls, int k, int keep)
{
    size_t n = 2 + (k > 1 ? (size_t)(k - 1) : 0); /* the brackets and the commas */
    for (int i = 0; i < k; i++)
        n += calls[i].body.len;
    http_write_head(out, 200, "application/json", n, keep);
    sbuf_add(out, "[", 1);
    for (int i = 0; i < k; i++) {
        if (i)
            sbuf_add(out, ",", 1);
        if (calls[i].body.len)
            sbuf_add(out, calls[i].body.p, calls[i].body.len);
    }
    sbuf_add(out, "]", 1);
}

/* A request one of whose calls found no ephemeral port has failed for it (its status is a
 * failure's, whatever the other calls did): counted once, however many of its calls did, so
 * that the count is of requests, as a client counts its failures. */
static void agg_count_no_port(const struct agg_call *calls, int k)
{
    for (int i = 0; i < k; i++)
        if (calls[i].why == DS_FAIL_NO_PORT) {
            SHARED_ADD(metrics_counters->req_no_port, 1);
            return;
        }
}

/* GET /aggregate[?parallel=1]: K downstream calls, answers joined into a JSON array. The
 * first failing call decides the status (502 or 504). */
static int agg_aggregate(struct server *s, struct http_request *rq, struct sbuf *out, int keep)
{
    const struct config *cfg = s->cfg;
    int k = cfg->fanout, status = 200;
    int parallel = (int)http_query_int(rq->query, rq->query_len, "parallel", 0);
    int64_t deadline = now_ns() + (int64_t)cfg->timeout_ms * NS_PER_MS;
    struct agg_call *calls = xcalloc((size_t)k, sizeof *calls);
    for (int i = 0; i < k; i++)
        calls[i] = (struct agg_call){.s = s, .item = i, .deadline = deadline, .why = -1};
    if (cfg->pin)
        vt_pin(); /* like a synchronized block around the calls (JDK 21) */
    /* A pinned thread cannot park in a join, and its children live on its own carrier, so
     * under --pin a fan-out would wait forever: the calls run one after the other instead. */
    if (parallel && k > 1 && !vt_pinned())
        agg_fan_out(calls, k, cfg->on_failure);
    else
        for (int i = 0; i < k && (i == 0 || calls[i - 1].status == 200); i++)
            agg_call_run(&calls[i]);
    if (cfg->pin)
        vt_unpin();
    for (int i = 0; i < k; i++) /* a failure decides over the cancellations it caused */
        if (calls[i].status != 200 && calls[i].status != DS_CANCELLED && status == 200)
            status = calls[i].status ? calls[i].status : 504;
    for (int i = 0; i < k; i++) /* cancelled without a failure: the runtime is stopping */
        if (calls[i].status == DS_CANCELLED && status == 200)
            status = 502;
    agg_count_no_port(calls, k);
    if (status != 200) {
        const char *reason = http_reasons[http_status_index(status)];
        http_write_response(out, status, "text/plain", reason, strlen(reason), keep);
    } else {
        agg_write_array(out, calls, k, keep);
    }
    for (int i = 0; i < k; i++)
        sbuf_free(&calls[i].body);
    free(calls);
    return status;
}

static int route_metrics(struct sbuf *out, int keep)
{
    struct sbuf page = {0};
    metrics_page(&page);
    http_write_response(out, 200, "text/plain; version=0.0.4", page.p, page.len, keep);
    sbuf_free(&page);
    return 200;
}

static int route_not_found(struct sbuf *out, int keep)
{
    http_write_response(out, 404, "text/plain", "Not Found", 9, keep);
    return 404;
}

static int path_is(const struct http_request *rq, const char *p)
{
    return rq->path_len == strlen(p) && !memcmp(rq->path, p, rq->path_len);
}

struct auth;
static int auth_check(const struct auth *a, const struct http_request *rq);
static int auth_refuse(struct sbuf *out, int status, int keep);

static int agg_route(struct server *s, struct http_request *rq, struct sbuf *out, int keep)
{
    if (rq->method_len != 3 || memcmp(rq->method, "GET", 3)) {
        http_write_response(out, 405, "text/plain", "Method Not Allowed", 18, keep);
        return 405;
    }
    int allowed = path_is(rq, "/aggregate") && s->cfg->auth ? auth_check(s->cfg->auth, rq) : 200;
    if (allowed != 200) /* --auth: a bearer token first (II.9), as a servlet filter would */
        return auth_refuse(out, allowed, keep);
    if (path_is(rq, "/aggregate"))
        return agg_aggregate(s, rq, out, keep);
    if (path_is(rq, "/metrics"))
        return route_metrics(out, keep);
    return route_not_found(out, keep);
}

/* ---- II.5 Downstream ---- */

/* An HTTP client connection, used for downstream calls and by the load generator. */
#define CLIENT_BUF (HTTP_MAX_HEAD + HTTP_MAX_RESP_BODY)
struct client {
    int fd;
    char *buf;           /* CLIENT_BUF bytes */
    size_t len;          /* bytes read and not consumed */
    struct client *next; /* link in a pool's idle list */
    int64_t idle_since;  /* ns: when it went back to the pool */
};

/* Outcomes of one exchange besides a parsed response. */
enum { CX_STALE = -1, CX_IO = -2, CX_TIMEOUT = -3, CX_BAD = -4, CX_CANCEL = -5 };

/* Whether a connected socket is connected to itself: its local address and port are its
 * peer's. TCP allows it (a simultaneous open with itself) when the port connected to is in
 * the ephemeral range, nobody listens there, and connect() happens to pick that very port as
 * its source: a dead backend's retries, thousands a second, find it within minutes. The
 * socket then reads its own request as the answer and, closed, leaves a TIME_WAIT on the
 * backend's port, which its restart cannot bind. */
static int client_self_connected(int fd)
{
    struct sockaddr_in local, peer;
    socklen_t ll = sizeof local, pl = sizeof peer;
    return getsockname(fd, (struct sockaddr *)&local, &ll) == 0 &&
           getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && local.sin_family == AF_INET &&
           local.sin_port == peer.sin_port && local.sin_addr.s_addr == peer.sin_addr.s_addr;
}

/* Make the close of fd a reset (RST, SO_LINGER 0): no TIME_WAIT, and a peer that still
 * holds a request of ours learns at once that nobody waits for its answer. */
static void client_reset_on_close(int fd)
{
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){1, 0}, sizeof(struct linger));
}

/* Connect to sa; NULL with errno on failure. A self-connect is refused (ECONNREFUSED, as
 * the port's truth is: nobody listens), reset rather than closed so that it leaves no
 * TIME_WAIT on the port. */
static struct client *client_open(const struct sockaddr_in *sa, int64_t deadline)
{
    int fd = io_connect(sa, deadline);
    if (fd >= 0 && client_self_connected(fd)) {
        client_reset_on_close(fd);
        io_close(fd);
        fd = -1;
        errno = ECONNREFUSED;
    }
    if (fd < 0)
        return NULL;
    struct client *cl = xcalloc(1, sizeof *cl);
    cl->fd = fd;
    cl->buf = xmalloc(CLIENT_BUF);
    return cl;
}

static void client_close(struct client *cl)
{
    if (!cl)
        return;
    io_close(cl->fd);
    free(cl->buf);
    free(cl);
}

static int client_errno_kind(void)
{
    return errno == ETIMEDOUT ? CX_TIMEOUT : errno == ECANCELED ? CX_CANCEL : CX_IO;
}

/* Send req and read one whole response into cl->buf. Returns its length (rs is filled and
 * points into cl->buf; the caller consumes it with client_consume), or a CX_ code. CX_STALE
 * means the peer closed before answering: a pooled keep-alive connection that the server
 * had already closed, worth one retry on a fresh connection. */
static long client_exchange(struct client *cl, const char *req, size_t n, int64_t deadline,
                            struct http_response *rs)
{
    if (io_write_all(cl->fd, req, n, deadline) < 0)
        return errno == EPIPE || errno == ECONNRESET ? CX_STALE : client_errno_kind();
    for (;;) {
        long r = http_parse_final_response(cl->buf, cl->len, rs);
        if (r > 0)
            return r;
        if (r < 0 || cl->len == CLIENT_BUF)
            return CX_BAD;
        ssize_t got = io_rw(cl->fd, VT_READ, cl->buf + cl->len, CLIENT_BUF - cl->len, deadline);
        if (got == 0 || (got < 0 && errno == ECONNRESET))
            return cl->len ? CX_BAD : CX_STALE;
        if (got < 0)
            return client_errno_kind();
        cl->len += (size_t)got;
    }
}

static void client_consume(struct client *cl, size_t n)
{
    memmove(cl->buf, cl->buf + n, cl->len - n);
    cl->len -= n;
}

/* Idle keep-alive connections to one backend. In virtual mode there is one pool per carrier
 * (a socket is registered with one carrier's epoll and stays there); in platform mode one
 * pool shared by all pool threads. Concurrency decides how many connections are open; what
 * the pool keeps once they are idle is bounded, as in Go's Transport (MaxIdleConnsPerHost,
 * IdleConnTimeout): at most --pool-max-idle per backend (split over the carriers' pools),
 * each closed after --pool-idle-ms idle (ds_sweep: the platform poller, or one virtual
 * thread for every carrier's pools). */
/* A backend that refuses connections is not asked again at once: after n refusals in a row,
 * not before DS_BACKOFF_MIN_MS << (n - 1), at most DS_BACKOFF_MAX_MS; calls meanwhile fail at
 * once, counted as refused. Every call retrying at once made a dead backend cost a connect()
 * per call (hundreds of thousands a minute) and, on an ephemeral port, a self-connect. The
 * cap bounds how long a backend that is back waits to be seen. Racy updates (relaxed atomics)
 * only move a retry a little. */
#define DS_BACKOFF_MIN_MS 1
#define DS_BACKOFF_MAX_MS 500
struct ds_backoff {
    int64_t until; /* ns: no connect before then */
    int refused;   /* refusals in a row */
};

struct ds_pool {
    pthread_mutex_t mu;  /* guards idle and nidle (uncontended in virtual mode) */
    struct client *idle; /* LIFO: the most recently used connection is the warmest, and the
                            longest idle are at the end */
    int nidle;           /* connections in idle */
};

static struct ds_pool *ds_pool_for(struct server *s, int backend)
{
    int slot = s->npool_slots > 1 && rt_self() >= 0 ? rt_self() : 0;
    return &s->pools[slot * s->cfg->nbackends + backend];
}

/* The pool a connection goes back to: its socket's carrier's (virtual mode), so that the
 * next call that takes it runs where its events arrive. A thread stolen with a connection
 * must not bring it home to the thief's pool: the calls taking it there would be woken on
 * the other carrier, and every request would bounce between the two. */
static struct ds_pool *ds_pool_home(struct server *s, int backend, int fd)
{
    int home = s->npool_slots > 1 ? io_home(fd) : -1;
    return home >= 0 ? &s->pools[home * s->cfg->nbackends + backend] : ds_pool_for(s, backend);
}

static void ds_init(struct server *s)
{
    s->npool_slots = s->cfg->mode == MODE_VIRTUAL && rt_carriers() > 0 ? rt_carriers() : 1;
    s->pool_slot_cap = s->cfg->pool_max_idle / s->npool_slots;
    if (s->pool_slot_cap < 1 && s->cfg->pool_max_idle > 0)
        s->pool_slot_cap = 1; /* at least one per carrier, unless none is asked for */
    s->pools = xcalloc((size_t)(s->npool_slots * s->cfg->nbackends), sizeof *s->pools);
    for (int i = 0; i < s->npool_slots * s->cfg->nbackends; i++)
        pthread_mutex_init(&s->pools[i].mu, NULL);
    s->backoff = xcalloc((size_t)s->cfg->nbackends, sizeof *s->backoff);
}

static void ds_free(struct server *s)
{
    for (int i = 0; s->pools && i < s->npool_slots * s->cfg->nbackends; i++) {
        while (s->pools[i].idle) {
            struct client *cl = s->pools[i].idle;
            s->pools[i].idle = cl->next;
            client_close(cl);
        }
        pthread_mutex_destroy(&s->pools[i].mu);
    }
    free(s->pools);
    s->pools = NULL;
    free(s->backoff);
    s->backoff = NULL;
}

/* Whether nothing has come on an idle connection since its last answer. Bytes would be read
 * as the next call's answer, and EOF means the backend closed it; either way it must not be
 * reused. Apache HttpClient's stale connection check peeks; io_quiet asks the runtime's
 * readiness first. What is left is the race every stale check has: bytes the backend sends
 * between the check and its reading of our request. The peek's window is the write's and the
 * request's trip (microseconds); the readiness adds at most IO_QUIET_NS. A FIN missed in it
 * costs no answer: the write or the read fails, client_exchange says CX_STALE and ds_call
 * retries on a fresh connection. Test: test_quiet. */
static int client_is_quiet(struct client *cl)
{
    return io_quiet(cl->fd);
}

/* An idle connection that is still quiet, or NULL; the others are closed on the way. */
static struct client *ds_take(struct ds_pool *backend_pool)
{
    for (;;) {
        pthread_mutex_lock(&backend_pool->mu);
        struct client *cl = backend_pool->idle;
        if (cl) {
            backend_pool->idle = cl->next;
            backend_pool->nidle--;
        }
        pthread_mutex_unlock(&backend_pool->mu);
        if (!cl || client_is_quiet(cl))
            return cl;
        client_close(cl);
    }
}

/* After an answer: keep the connection for the next call if keep says so, nothing was read
 * past the answer, and the pool is under its cap; close it otherwise. */
static void ds_release(struct server *s, struct ds_pool *backend_pool, struct client *cl, int keep)
{
    int64_t now = now_ns();
    int kept = 0; /* once in the pool, cl is another thread's to take: not read after */
    if (keep && !cl->len) {
        pthread_mutex_lock(&backend_pool->mu);
        kept = backend_pool->nidle < s->pool_slot_cap;
        if (kept) {
            cl->idle_since = now;
            cl->next = backend_pool->idle;
            backend_pool->idle = cl;
            backend_pool->nidle++;
        }
        pthread_mutex_unlock(&backend_pool->mu);
    }
    if (!kept)
        client_close(cl);
}

/* Close the connections of pool slot `slot` idle for --pool-idle-ms. Returns when the next
 * one will be (ns), or now + pool_idle_ms when none is left: any connection put back later
 * expires after that, so a sweeper sleeping until then misses none. O(idle) per sweep. */
static int64_t ds_sweep(struct server *s, int slot, int64_t now)
{
    int64_t idle_ns = (int64_t)s->cfg->pool_idle_ms * NS_PER_MS, next = now + idle_ns;
    for (int b = 0; b < s->cfg->nbackends; b++) {
        struct ds_pool *backend_pool = &s->pools[slot * s->cfg->nbackends + b];
        pthread_mutex_lock(&backend_pool->mu);
        struct client **link = &backend_pool->idle;
        while (*link && (*link)->idle_since + idle_ns > now) { /* newest first */
            if ((*link)->idle_since + idle_ns < next)
                next = (*link)->idle_since + idle_ns;
            link = &(*link)->next;
        }
        struct client *expired = *link; /* and everything after it: idle longer */
        *link = NULL;
        for (struct client *cl = expired; cl; cl = cl->next)
            backend_pool->nidle--;
        pthread_mutex_unlock(&backend_pool->mu);
        while (expired) {
            struct client *cl = expired;
            expired = cl->next;
            client_close(cl);
        }
    }
    return next;
}

/* Virtual mode: one virtual thread sweeping every carrier's pools (it may run on any
 * carrier: threads are stolen, and the pools have their locks). Ends when the runtime shuts
 * down. */
static void ds_sweeper(void *arg)
{
    struct server *s = arg;
    int64_t next = now_ns();
    while (vt_sleep_until(next) == 0) {
        int64_t now = now_ns();
        next = now + (int64_t)s->cfg->pool_idle_ms * NS_PER_MS;
        for (int slot = 0; slot < s->npool_slots; slot++) {
            int64_t t = ds_sweep(s, slot, now);
            next = t < next ? t : next;
        }
    }
}

/* The reason a connect() that failed with errno err is counted under. */
static int ds_connect_reason(int err)
{
    return err == EADDRNOTAVAIL  ? DS_FAIL_NO_PORT
           : err == ETIMEDOUT    ? DS_FAIL_TIMEOUT
           : err == ECONNREFUSED ? DS_FAIL_REFUSED
                                 : DS_FAIL_OTHER;
}

/* Count a failed downstream call and name it in the log: a reason's first failure at once,
 * then at most one line a second with the count since the last (a wall of ports fails
 * thousands of calls a second). Returns the status the call answers: 504 after a timeout,
 * else 502. */
static int ds_failed(int reason, int err)
{
    struct metrics *m = metrics_counters;
    SHARED_ADD(m->ds_failed[reason], 1);
    SHARED_ADD(m->ds_unlogged[reason], 1);
    int64_t now = now_ns(), next = LOAD(m->ds_log_next[reason]);
    if (now >= next && __atomic_compare_exchange_n(&m->ds_log_next[reason], &next, now + NS_PER_S,
                                                   0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        uint64_t n = __atomic_exchange_n(&m->ds_unlogged[reason], 0, __ATOMIC_RELAXED);
        fprintf(stderr, "aggregator: %s%s%s: %llu call%s\n", ds_fail_messages[reason],
                reason == DS_FAIL_OTHER ? ": " : "", reason == DS_FAIL_OTHER ? strerror(err) : "",
                (unsigned long long)n, n == 1 ? "" : "s since the last line");
    }
    return reason == DS_FAIL_TIMEOUT ? 504 : 502;
}

/* Count a cancelled call (a sibling failed, or the runtime is stopping): not a failure, as
 * the JVM aggregator counts an interrupted call apart. */
static int ds_cancelled(void)
{
    SHARED_ADD(metrics_counters->ds_cancelled, 1);
    return DS_CANCELLED;
}

/* A call let go of the connection it held since `since` (its connect, or its checkout from
 * the pool): the time a connection is spent for a call, which a cancelled sibling shortens. */
static void ds_held(int64_t since)
{
    SHARED_ADD(metrics_counters->ds_held_us, (uint64_t)((now_ns() - since) / 1000));
}

/* The reason for an exchange's outcome r (a CX_ code). */
static int ds_exchange_reason(long r)
{
    return r == CX_TIMEOUT                ? DS_FAIL_TIMEOUT
           : r == CX_BAD || r == CX_STALE ? DS_FAIL_BAD
                                          : DS_FAIL_OTHER;
}

/* --close-first server: after the answer to a `Connection: close` request, wait (until the
 * call's deadline) for the backend's FIN, so that it closes first and the TIME_WAIT is its.
 * Bytes after the answer are dropped; a timeout or a reset ends the wait all the same. */
static void ds_await_fin(struct client *cl, int64_t deadline)
{
    char buf[512];
    while (io_rw(cl->fd, VT_READ, buf, sizeof buf, deadline) > 0)
        ;
}

/* JSON (RFC 8259) is checked, not parsed: the bodies are copied into the aggregate's array
 * as they are, so each must be exactly one value, or one body could end the array and add
 * to the answer ("1],\"injected\":[2") or leave a hole in it (an empty body: "[,]"). The
 * nesting is bounded: a body of 16 KiB cannot exhaust the stack. */
#define JSON_MAX_DEPTH 64

static const char *json_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* A string from its opening quote: the byte after its closing quote, or NULL. */
static const char *json_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '"')
            return p + 1;
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            if (++p == end || !strchr("\"\\/bfnrtu", *p))
                return NULL;
            for (int i = 0, hex = *p == 'u' ? 4 : 0; i < hex; i++)
                if (++p == end || !isxdigit((unsigned char)*p))
                    return NULL;
        }
    }
    return NULL;
}

/* A number: -? int frac? exp?, int without leading zeros. The byte after it, or NULL. */
static const char *json_number(const char *p, const char *end)
{
    const char *q = p + (p < end && *p == '-');
    if (q == end || !isdigit((unsigned char)*q))
        return NULL;
    if (*q == '0')
        q++;
    else
        while (q < end && isdigit((unsigned char)*q))
            q++;
    if (q < end && *q == '.') {
        if (++q == end || !isdigit((unsigned char)*q))
            return NULL;
        while (q < end && isdigit((unsigned char)*q))
            q++;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        q += q + 1 < end && (q[1] == '+' || q[1] == '-');
        if (++q >= end || !isdigit((unsigned char)*q))
            return NULL;
        while (q < end && isdigit((unsigned char)*q))
            q++;
    }
    return q;
}

/* One value at p (after white space): the byte after it, or NULL. */
static const char *json_value(const char *p, const char *end, int depth)
{
    static const char *const words[] = {"true", "false", "null"};
    p = json_ws(p, end);
    if (p == end || depth > JSON_MAX_DEPTH)
        return NULL;
    if (*p == '"')
        return json_string(p, end);
    if (*p == '[' || *p == '{') {
        char close = *p == '[' ? ']' : '}';
        const char *q = json_ws(p + 1, end);
        if (q < end && *q == close)
            return q + 1;
        for (;;) {
            if (close == '}') { /* a member: string ":" value */
                q = json_ws(q, end);
                q = q < end && *q == '"' ? json_string(q, end) : NULL;
                q = q ? json_ws(q, end) : NULL;
                if (!q || q == end || *q++ != ':')
                    return NULL;
            }
            q = json_value(q, end, depth + 1);
            q = q ? json_ws(q, end) : NULL;
            if (!q || q == end)
                return NULL;
            if (*q == close)
                return q + 1;
            if (*q++ != ',')
                return NULL;
        }
    }
    for (size_t i = 0; i < ARRAY_LEN(words); i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(end - p) >= n && !memcmp(p, words[i], n))
            return p + n;
    }
    return json_number(p, end);
}

/* Whether p[0, n) is exactly one JSON value, white space around it allowed. */
static int json_is_one_value(const char *p, size_t n)
{
    const char *e = json_value(p, p + n, 0);
    return e && json_ws(e, p + n) == p + n;
}

/* A new connection to a backend, unless it is backing off (struct ds_backoff): NULL with
 * errno ECONNREFUSED then, without a connect(). */
static struct client *ds_open(struct server *s, int backend, int64_t deadline)
{
    struct ds_backoff *b = &s->backoff[backend];
    if (now_ns() < LOAD(b->until)) {
        errno = ECONNREFUSED;
        return NULL;
    }
    struct client *cl = client_open(&s->cfg->backends[backend], deadline);
    int refused = !cl && errno == ECONNREFUSED, n = refused ? LOAD(b->refused) + 1 : 0;
    int64_t wait_ms = n > 10 ? DS_BACKOFF_MAX_MS : (int64_t)DS_BACKOFF_MIN_MS << (n ? n - 1 : 0);
    int err = errno;
    __atomic_store_n(&b->refused, n, __ATOMIC_RELAXED);
    __atomic_store_n(
        &b->until,
        n ? now_ns() + (wait_ms < DS_BACKOFF_MAX_MS ? wait_ms : DS_BACKOFF_MAX_MS) * NS_PER_MS : 0,
        __ATOMIC_RELAXED);
    errno = err;
    return cl;
}

/* GET /item/<item> from a backend; appends the body to out. Returns 200, 502 (bad or no
 * answer) or 504 (timed out), each failure counted by its reason (ds_failed); a connect's
 * reason also lands in *why (the request counts a call that found no port). With --no-pool
 * every call opens a connection and closes it after the answer. Who closes first keeps the
 * TIME_WAIT (60 s): with --close-first client (the default) we do, so each call holds one of
 * our ephemeral ports for a minute, and at more calls a second than the range has ports over
 * 60 s, connect() fails with EADDRNOTAVAIL (the wall). With --close-first server the request
 * says `Connection: close` and we wait for the backend's FIN before closing (as the JDK's
 * HttpURLConnection without keep-alive does): the TIME_WAIT is the backend's, on its listening
 * port, where Linux lets a new SYN from the same port take it over, so there is no wall. */
static int ds_call(struct server *s, int backend, int item, struct sbuf *out, int64_t deadline,
                   int *why)
{
    const struct config *cfg = s->cfg;
    struct ds_pool *backend_pool = ds_pool_for(s, backend);
    static const char head[] = "GET /item/", keep[] = " HTTP/1.1\r\nHost: backend\r\n\r\n",
                      close[] = " HTTP/1.1\r\nHost: backend\r\nConnection: close\r\n\r\n";
    int server_closes = !cfg->pool && cfg->close_first == CLOSE_SERVER;
    const char *tail = server_closes ? close : keep;
    size_t nt = server_closes ? sizeof close - 1 : sizeof keep - 1;
    char req[128], d[24], *digits = fmt_ulong(d + sizeof d, (unsigned long)item);
    size_t nd = (size_t)(d + sizeof d - digits), n = sizeof head - 1 + nd + nt;
    memcpy(req, head, sizeof head - 1);
    memcpy(req + sizeof head - 1, digits, nd);
    memcpy(req + sizeof head - 1 + nd, tail, nt);
    SHARED_ADD(metrics_counters->ds_calls, 1);
    int64_t held = now_ns();
    struct client *cl = cfg->pool ? ds_take(backend_pool) : NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = cl != NULL;
        if (!cl) {
            held = now_ns();
            cl = ds_open(s, backend, deadline);
            if (!cl) {
                int err = errno;
                return err == ECANCELED ? ds_cancelled()
                                        : ds_failed(*why = ds_connect_reason(err), err);
            }
            SHARED_ADD(metrics_counters->ds_opened, 1);
        }
        struct http_response rs;
        long r = client_exchange(cl, req, n, deadline, &rs);
        if (r == CX_STALE && reused) {
            client_close(cl);
            ds_held(held);
            cl = NULL;
            continue;
        }
        if (r < 0) { /* closed, never pooled: a half-read answer would be the next call's */
            int err = errno;
            client_close(cl);
            ds_held(held);
            return r == CX_CANCEL ? ds_cancelled() : ds_failed(ds_exchange_reason(r), err);
        }
        int status = rs.status == 200 && json_is_one_value(rs.body, rs.body_len)
                         ? 200
                         : ds_failed(DS_FAIL_BAD, 0);
        sbuf_add(out, rs.body, rs.body_len);
        client_consume(cl, (size_t)r);
        if (server_closes)
            ds_await_fin(cl, deadline);
        ds_release(s, ds_pool_home(s, backend, cl->fd), cl, cfg->pool && rs.keep_alive);
        ds_held(held);
        return status;
    }
    return ds_failed(DS_FAIL_BAD, 0); /* not reached: the second attempt is on a new connection */
}

/* ---- II.6 Backend ---- */

/* GET /item/<i>[?delay_ms=D]: a ~100-byte JSON body after D ms (default --delay-ms, plus a
 * uniform random 0..--jitter-ms). The wait is a timed park: no thread is held, but the
 * connection is, so a client may not ask for more than BACKEND_MAX_DELAY_MS (400). */
#define BACKEND_MAX_DELAY_MS 60000

/* 400 with the reason as its body: a request the backend will not guess at. */
static int backend_refuse(struct sbuf *out, const char *why, int keep)
{
    http_write_response(out, 400, "text/plain", why, strlen(why), keep);
    return 400;
}

/* Whether the backend's next /item call fails (--fail-share F): call n (from 0, in the order
 * the calls arrive) fails when floor((n + 1) F) > floor(n F), a stride rule (Bresenham's): of
 * any run of calls, the share F fails, evenly spaced and the same in every run, with no
 * random draw (F = 0.25: calls 3, 7, 11, ...; F = 1: every call). */
static int backend_fails(struct server *s)
{
    double f = s->cfg->fail_share;
    if (!(f > 0))
        return 0;
    uint64_t n = SHARED_ADD(s->item_calls, 1);
    return (uint64_t)((double)(n + 1) * f) > (uint64_t)((double)n * f);
}

/* A failing call: 500 after --fail-after-ms (a timed park, as the delay is). */
static int backend_fail(struct server *s, struct sbuf *out, int keep)
{
    static const char why[] = "Internal Server Error";
    int64_t ms = s->cfg->fail_after_ms;
    if (ms > 0 && vt_sleep_until(now_ns() + ms * NS_PER_MS) < 0)
        return 503;
    http_write_response(out, 500, "text/plain", why, sizeof why - 1, keep);
    return 500;
}

static int backend_route(struct server *s, struct http_request *rq, struct sbuf *out, int keep)
{
    if (rq->path_len < 6 || memcmp(rq->path, "/item/", 6)) {
        if (path_is(rq, "/metrics"))
            return route_metrics(out, keep);
        return route_not_found(out, keep);
    }
    long id, delay;
    if (http_digits(rq->path + 6, rq->path_len - 6, &id) < 0 || id > INT_MAX)
        return backend_refuse(out, "bad item id: want /item/0 .. /item/2147483647", keep);
    int has_delay = http_query_get(rq->query, rq->query_len, "delay_ms", &delay);
    if (has_delay < 0)
        return backend_refuse(out, "bad delay_ms: want a whole number of ms", keep);
    if (has_delay && delay > BACKEND_MAX_DELAY_MS)
        return backend_refuse(out, "delay_ms too large", keep);
    if (backend_fails(s))
        return backend_fail(s, out, keep);
    if (!has_delay)
        delay = s->cfg->delay_ms;
    if (s->cfg->jitter_ms > 0) {
        uint64_t x = s->seed; /* xorshift64; racy updates only make it more random */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s->seed = x;
        delay += (long)(x % (uint64_t)(s->cfg->jitter_ms + 1));
    }
    if (delay > 0 && vt_sleep_until(now_ns() + delay * NS_PER_MS) < 0)
        return 503;
    char body[160];
    int n = snprintf(body, sizeof body,
                     "{\"id\":%ld,\"name\":\"item-%ld\",\"price\":%ld.%02ld,\"stock\":%ld,\"tags\":"
                     "[\"loom\",\"lab\"]}",
                     id, id, 10 + id % 90, id * 7 % 100, 100 - id % 100);
    http_write_response(out, 200, "application/json", body, (size_t)n, keep);
    return 200;
}

/* ---- II.7 Platform server ---- */

/* Tomcat's NIO connector and its executor, in miniature.
 *   - The acceptor/poller thread accepts up to max_connections connections (then stops
 *     accepting: new ones wait in the kernel's backlog of accept_count; when accept fails
 *     for want of fds it stops for ACCEPT_BACKOFF_MS) and watches the connections that have
 *     no whole request yet with epoll (one-shot).
 *   - It reads what a readable connection has sent, without blocking, and keeps it until a
 *     whole request is in (Tomcat parses the request line and headers in non-blocking mode
 *     too), so a client sending a byte at a time holds a buffer, never a pool thread. Each
 *     watched connection has a deadline, --idle-ms after it was accepted or answered, for
 *     its whole next request however it spaces its bytes; the watch list is in deadline
 *     order (every deadline is now + idle_ms when set), and the poller sleeps until the
 *     first and closes what is past it (Tomcat's keepAliveTimeout and connectionTimeout).
 *   - A connection with a whole request becomes a task in the executor's queue (unbounded
 *     unless --max-queue; a full queue answers 503 at once).
 *   - Pool threads take tasks. Like Tomcat's TaskQueue, a task that finds no idle thread
 *     makes the pool grow, from min_spare up to threads; only then do tasks wait in line.
 *     A thread idle for --thread-idle-ms (Tomcat's maxIdleTime, 60 s) exits, down to
 *     min_spare.
 *   - A pool thread serves the request, blocking in poll() on its downstream calls, then
 *     hands the connection back to the poller. A request whose client closed while it was
 *     queued is dropped instead (pool_client_gone): the queue is the one place where a
 *     connection is watched by nobody, and one dead request costs a thread K x D. */
struct pool {
    struct server *srv;
    int epfd;   /* the poller's epoll: listening socket, stop eventfd, conns */
    int stopfd; /* eventfd: wakes the poller to stop */
    pthread_t poller;
    pthread_t *tids;            /* pool thread slots, cfg->threads of them */
    unsigned char *slot;        /* per slot: POOL_SLOT_FREE, _RUNNING or _EXITED (join first) */
    pthread_attr_t attr;        /* pool threads: 256 KiB stacks so thousands would fit */
    pthread_mutex_t mu;         /* guards everything below */
    pthread_cond_t cv;          /* signalled when a task arrives or when stopping (monotonic) */
    struct conn *qhead, *qtail; /* tasks: connections with a request to serve */
    long qlen;                  /* tasks queued */
    int nthreads;               /* pool threads alive */
    int peak_threads;           /* most pool threads alive at once */
    int idle;                   /* pool threads waiting for a task */
    int stopping;               /* 1: pool threads exit when the queue is empty */
    long nconns;                /* connections held */
    int accept_paused;          /* listener out of epoll (max_connections, or out of fds) */
    struct conn *watch_head;    /* connections the poller watches, earliest deadline first */
    struct conn *watch_tail;    /* (every other connection is queued or being served) */
    /* poller only (ns): when its timed work is next due; early is harmless, late is not */
    int64_t accept_retry; /* resume accepting after EMFILE, or 0 */
    int64_t expire_at;    /* the first watched deadline (none watched: one watched later is
                             due after now + idle_ms, now being when this was computed) */
    int64_t sweep_at;     /* the downstream pool's next idle connection to close */
};

enum { POOL_SLOT_FREE, POOL_SLOT_RUNNING, POOL_SLOT_EXITED };

/* pool_grow starts it; it is defined after the queue it takes its tasks from. */
static void *pool_thread(void *arg);

/* Arm a connection's one-shot epoll event: reported once, to the poller. */
static void pool_arm(struct pool *p, struct conn *conn, int op)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.ptr = conn};
    epoll_ctl(p->epfd, op, conn->fd, &ev);
}

/* Watch a connection for its next request, due within --idle-ms. The caller holds p->mu: a
 * pool thread re-arming it must, since the poller can report it, and another pool thread
 * serve and close it, before epoll_ctl has returned here, and both of those take p->mu first
 * (pool_unwatch, pool_close), so the lock orders this thread's last use of the connection
 * before theirs. The release store says the same to the poller, which reads the
 * connection's bytes before taking the lock. */
static void pool_watch(struct pool *p, struct conn *conn, int op)
{
    conn->deadline = now_ns() + (int64_t)p->srv->cfg->idle_ms * NS_PER_MS;
    conn->watch_next = NULL;
    conn->watch_prev = p->watch_tail; /* the latest deadline: the tail keeps the order */
    if (p->watch_tail)
        p->watch_tail->watch_next = conn;
    else
        p->watch_head = conn;
    p->watch_tail = conn;
    __atomic_store_n(&conn->handoff, 1, __ATOMIC_RELEASE);
    pool_arm(p, conn, op);
}

/* Stop watching a connection (its request is whole, or it is closing). Holds p->mu. */
static void pool_unwatch(struct pool *p, struct conn *conn)
{
    if (conn->watch_prev)
        conn->watch_prev->watch_next = conn->watch_next;
    else
        p->watch_head = conn->watch_next;
    if (conn->watch_next)
        conn->watch_next->watch_prev = conn->watch_prev;
    else
        p->watch_tail = conn->watch_prev;
}

static void pool_watch_listener(struct pool *p, int op)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
    epoll_ctl(p->epfd, op, p->srv->lfd, &ev);
}

/* Start one more pool thread in a slot that is free or whose thread has exited (joined
 * here: it has already left, or is leaving, p->mu). The caller holds p->mu. */
static void pool_grow(struct pool *p)
{
    int i = 0;
    while (i < p->srv->cfg->threads && p->slot[i] == POOL_SLOT_RUNNING)
        i++;
    if (i == p->srv->cfg->threads)
        return;
    if (p->slot[i] == POOL_SLOT_EXITED)
        pthread_join(p->tids[i], NULL);
    p->slot[i] = POOL_SLOT_FREE;
    if (pthread_create(&p->tids[i], &p->attr, pool_thread, p) != 0)
        return; /* the queue absorbs it */
    p->slot[i] = POOL_SLOT_RUNNING;
    if (++p->nthreads > p->peak_threads)
        p->peak_threads = p->nthreads;
    SHARED_ADD(metrics_counters->pool_size, 1);
}

/* Wait for a task up to the idle time; returns ETIMEDOUT if none came. Holds p->mu. */
static int pool_wait_task(struct pool *p)
{
    struct timespec ts;
    int64_t t = now_ns() + (int64_t)p->srv->cfg->thread_idle_ms * NS_PER_MS;
    ts.tv_sec = t / NS_PER_S;
    ts.tv_nsec = t % NS_PER_S;
    p->idle++;
    int r = pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    p->idle--;
    return r;
}

/* Drop a connection that is not watched: free it and, if the acceptor had paused, resume. */
static void pool_close(struct pool *p, struct conn *conn)
{
    pthread_mutex_lock(&p->mu);
    p->nconns--;
    if (p->accept_paused && p->nconns < p->srv->cfg->max_connections && !p->stopping) {
        p->accept_paused = 0;
        pool_watch_listener(p, EPOLL_CTL_ADD);
    }
    pthread_mutex_unlock(&p->mu);
    conn_free(conn);
}

/* Queue a connection with a whole request (the executor's execute()). */
static void pool_submit(struct pool *p, struct conn *conn)
{
    pthread_mutex_lock(&p->mu);
    if (p->srv->cfg->max_queue > 0 && p->qlen >= p->srv->cfg->max_queue) {
        pthread_mutex_unlock(&p->mu);
        static const char busy[] =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        if (write(conn->fd, busy, sizeof busy - 1) < 0) {
            /* best effort; the socket is closing */
        }
        metrics_request(503, 0);
        pool_close(p, conn);
        return;
    }
    conn->next = NULL;
    if (p->qtail)
        p->qtail->next = conn;
    else
        p->qhead = conn;
    p->qtail = conn;
    p->qlen++;
    SHARED_ADD(metrics_counters->pool_queue, 1);
    if (p->qlen > p->idle && p->nthreads < p->srv->cfg->threads)
        pool_grow(p);
    else
        pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Whether the client of a queued connection has gone: it reset the connection while its
 * request waited for a pool thread. Once the poller hands a connection to the executor it
 * stops watching it (as Tomcat's NIO Poller does once a SocketProcessor has it), so nothing
 * else notices, and serving it anyway would hold a pool thread for K downstream calls whose
 * answer nobody reads. A load generator that stops with N connections open resets those
 * with a request still in flight (load_user_main), which would leave up to N - threads such
 * requests in the queue, K * D of pool time each spent before the next client's first
 * request: a second run on the same server reached a fraction of the ceiling (README has the
 * figures). One MSG_PEEK recv per request. A FIN alone is not a client gone: a client that
 * half-closes after its request (shutdown(SHUT_WR), `nc -N`) still reads the answer, and
 * HTTP/1.1 lets it (RFC 9112 9.6 has a close only end the sending side); Tomcat answers it,
 * and so does virtual mode, which never peeks. The request's bytes are already in conn->buf,
 * so a byte waiting here is a pipelined request: still there. */
static int pool_client_gone(const struct conn *conn)
{
    char c;
    ssize_t n = recv(conn->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

/* Serve a connection taken from the queue: its buffered requests, unless its client has
 * gone. Returns 1 to give it back to the poller, 0 once it is closed. */
static int pool_serve(struct pool *p, struct conn *conn)
{
    int keep = !pool_client_gone(conn) && conn_serve_one(conn);
    while (keep && conn_request_buffered(conn))
        keep = conn_serve_one(conn); /* pipelined requests; a part of one waits in the poller */
    if (!keep)
        pool_close(p, conn);
    return keep;
}

/* A pool thread: take a task, serve the connection's requests that are buffered, give the
 * connection back to the poller (or close it), repeat. */
static void *pool_thread(void *arg)
{
    struct pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        int retire = 0;
        while (!p->qhead && !p->stopping && !retire)
            retire =
                pool_wait_task(p) == ETIMEDOUT && !p->qhead && p->nthreads > p->srv->cfg->min_spare;
        if (!p->qhead)
            break; /* stopping, or idle too long */
        struct conn *conn = p->qhead;
        p->qhead = conn->next;
        if (!p->qhead)
            p->qtail = NULL;
        p->qlen--;
        SHARED_ADD(metrics_counters->pool_queue, -1);
        SHARED_ADD(metrics_counters->pool_busy, 1);
        pthread_mutex_unlock(&p->mu);
        int keep = pool_serve(p, conn);
        SHARED_ADD(metrics_counters->pool_busy, -1);
        pthread_mutex_lock(&p->mu);
        if (keep)
            pool_watch(p, conn, EPOLL_CTL_MOD); /* under the lock: see pool_watch */
    }
    for (int i = 0; i < p->peak_threads; i++) /* tell pool_grow or pool_stop to join us */
        if (p->slot[i] == POOL_SLOT_RUNNING && pthread_equal(p->tids[i], pthread_self()))
            p->slot[i] = POOL_SLOT_EXITED;
    p->nthreads--;
    SHARED_ADD(metrics_counters->pool_size, -1);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Take the listener out of epoll until pool_close or pool_timers puts it back. */
static void pool_pause_accept(struct pool *p)
{
    pthread_mutex_lock(&p->mu);
    if (!p->accept_paused)
        pool_watch_listener(p, EPOLL_CTL_DEL);
    p->accept_paused = 1;
    pthread_mutex_unlock(&p->mu);
}

/* Accept what the backlog holds, up to max_connections. */
static void pool_accept(struct pool *p)
{
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int full = p->nconns >= p->srv->cfg->max_connections;
        pthread_mutex_unlock(&p->mu);
        if (full) {
            pool_pause_accept(p); /* until a connection closes */
            return;
        }
        int fd = accept4(p->srv->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
            continue;
        if (fd < 0 && errno != EAGAIN) { /* EMFILE, ENFILE, ENOBUFS, ENOMEM */
            pool_pause_accept(p);
            p->accept_retry = now_ns() + ACCEPT_BACKOFF_MS * NS_PER_MS;
        }
        if (fd < 0)
            return;
        uint32_t addr = 0;
        int counted;
        if (server_admit(p->srv, fd, &addr, &counted) < 0 || io_adopt(fd) < 0) {
            if (counted)
                server_release(p->srv, addr);
            close(fd);
            continue;
        }
        struct conn *conn = conn_new(p->srv, fd);
        conn->addr = addr;
        conn->counted = counted;
        pthread_mutex_lock(&p->mu);
        p->nconns++;
        pool_watch(p, conn, EPOLL_CTL_ADD);
        pthread_mutex_unlock(&p->mu);
    }
}

/* A watched connection is readable: read what it sent. A whole request (or one to refuse)
 * goes to the executor; a part of one stays watched, its deadline unchanged. */
static void pool_readable(struct pool *p, struct conn *conn)
{
    struct http_request rq;
    (void)__atomic_load_n(&conn->handoff, __ATOMIC_ACQUIRE); /* see pool_watch */
    long r = conn_read_request(conn, &rq, 0);
    if (r == CONN_WAIT) {
        pool_arm(p, conn, EPOLL_CTL_MOD);
        return;
    }
    pthread_mutex_lock(&p->mu);
    pool_unwatch(p, conn);
    pthread_mutex_unlock(&p->mu);
    if (r == CONN_GONE)
        pool_close(p, conn);
    else
        pool_submit(p, conn);
}

/* Close the watched connections past their deadline; returns the next deadline, or now +
 * idle_ms if none: a connection watched later is due after that. Poller only, between
 * epoll_wait batches, so no event of this batch can name a connection freed here. */
static int64_t pool_expire(struct pool *p, int64_t now)
{
    struct conn *expired = NULL;
    pthread_mutex_lock(&p->mu);
    while (p->watch_head && p->watch_head->deadline <= now) {
        struct conn *conn = p->watch_head;
        pool_unwatch(p, conn);
        epoll_ctl(p->epfd, EPOLL_CTL_DEL, conn->fd, NULL); /* a forked child may share the fd */
        conn->next = expired;
        expired = conn;
    }
    int64_t next =
        p->watch_head ? p->watch_head->deadline : now + (int64_t)p->srv->cfg->idle_ms * NS_PER_MS;
    pthread_mutex_unlock(&p->mu);
    while (expired) {
        struct conn *conn = expired;
        expired = conn->next;
        pool_close(p, conn);
    }
    return next;
}

/* The poller's timed work: idle connections, the acceptor's back-off, the downstream pool's
 * idle connections, each only when due (it runs at every wake-up, so it must not take the
 * locks each time). Returns when it is next due (ns). */
static int64_t pool_timers(struct pool *p)
{
    int64_t now = now_ns();
    if (now >= p->expire_at)
        p->expire_at = pool_expire(p, now);
    if (p->srv->pools && now >= p->sweep_at)
        p->sweep_at = ds_sweep(p->srv, 0, now);
    int64_t next = p->expire_at;
    if (p->srv->pools && p->sweep_at < next)
        next = p->sweep_at;
    if (p->accept_retry && now >= p->accept_retry) {
        p->accept_retry = 0;
        pthread_mutex_lock(&p->mu);
        if (p->accept_paused && !p->stopping) {
            p->accept_paused = 0; /* pool_accept pauses again if still out of fds */
            pool_watch_listener(p, EPOLL_CTL_ADD);
        }
        pthread_mutex_unlock(&p->mu);
    }
    if (p->accept_retry && p->accept_retry < next)
        next = p->accept_retry;
    return next;
}

static void *pool_poller(void *arg)
{
    struct pool *p = arg;
    struct epoll_event ev[256];
    for (;;) {
        int64_t wait = pool_timers(p) - now_ns();
        int ms = wait <= 0 ? 0 : (int)((wait + NS_PER_MS - 1) / NS_PER_MS);
        int n = epoll_wait(p->epfd, ev, (int)ARRAY_LEN(ev), ms);
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == &p->stopfd)
                return NULL;
            if (ev[i].data.ptr == p)
                pool_accept(p);
            else
                pool_readable(p, ev[i].data.ptr);
        }
    }
}

static void pool_start(struct server *s)
{
    struct pool *p = xcalloc(1, sizeof *p);
    s->pool = p;
    p->srv = s;
    pthread_mutex_init(&p->mu, NULL);
    p->tids = xcalloc((size_t)s->cfg->threads, sizeof *p->tids);
    p->slot = xcalloc((size_t)s->cfg->threads, 1);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* idle deadlines are now_ns() values */
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_attr_init(&p->attr);
    pthread_attr_setstacksize(&p->attr, 256 * 1024);
    p->epfd = epoll_create1(EPOLL_CLOEXEC);
    p->stopfd = eventfd(0, EFD_CLOEXEC);
    if (p->epfd < 0 || p->stopfd < 0) /* else the poller spins on a bad fd and never stops */
        die("epoll/eventfd: %s", strerror(errno));
    fcntl(s->lfd, F_SETFL, O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &p->stopfd};
    if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->stopfd, &ev) < 0)
        die("epoll_ctl: %s", strerror(errno));
    pool_watch_listener(p, EPOLL_CTL_ADD);
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < s->cfg->min_spare && i < s->cfg->threads; i++)
        pool_grow(p);
    pthread_mutex_unlock(&p->mu);
    if (pthread_create(&p->poller, NULL, pool_poller, p))
        die("pthread_create poller");
}

/* Stop accepting, let the pool finish the queued requests, then free every connection. */
static void pool_stop(struct server *s)
{
    struct pool *p = s->pool;
    uint64_t one = 1;
    if (write(p->stopfd, &one, sizeof one) < 0)
        die("eventfd: %s", strerror(errno));
    pthread_join(p->poller, NULL);
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    /* the poller is gone: no more can start; pool_grow fills the lowest free slot, so every
     * slot ever used is below the peak (a scan of all --threads slots took seconds) */
    for (int i = 0; i < p->peak_threads; i++) {
        pthread_mutex_lock(&p->mu); /* exiting threads mark their slot under the lock */
        int started = p->slot[i] != POOL_SLOT_FREE;
        pthread_mutex_unlock(&p->mu);
        if (started)
            pthread_join(p->tids[i], NULL);
    }
    free(p->tids);
    free(p->slot);
    while (p->watch_head) { /* the threads are gone: every connection left is watched */
        struct conn *conn = p->watch_head;
        pool_unwatch(p, conn);
        conn_free(conn);
    }
    close(p->epfd);
    close(p->stopfd);
    pthread_attr_destroy(&p->attr);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
    s->pool = NULL;
}

/* ---- II.8 Virtual server ---- */

/* One virtual thread per connection, for its whole life: the code reads as if it blocked,
 * and every wait parks. This is Tomcat with spring.threads.virtual.enabled=true. */
static void vconn_main(void *arg)
{
    struct conn *conn = arg;
    if (io_adopt(conn->fd) < 0) { /* register with this carrier's epoll */
        conn->fd = -1;
        SHARED_ADD(conn->srv->vconns, -1);
        conn_free(conn);
        return;
    }
    /* keep-alive: serve the next request, but with one already buffered (pipelined), yield
     * first. The scheduler is not preemptive, Loom's no more than ours: a virtual thread keeps
     * its carrier until it parks, and a client that pipelines requests as fast as it reads the
     * answers never makes this one park (every read finds bytes, every write room), so without
     * the yield two such clients would hold both carriers and everyone else would wait. Tomcat
     * bounds the same loop in its own way: Http11Processor serves buffered requests one after
     * another only up to maxKeepAliveRequests (100), and a connection with nothing buffered goes
     * back to its poller, behind the other sockets that are ready. */
    while (conn_serve_one(conn))
        if (conn->len)
            vt_yield();
    SHARED_ADD(conn->srv->vconns, -1);
    conn_free(conn);
}

/* One listening socket, an acceptor on every carrier. Each carrier's epoll watches the
 * socket, through a dup of its fd of its own (the runtime's per-fd state belongs to one
 * carrier), with EPOLLEXCLUSIVE: a new connection wakes one carrier waiting in epoll, not
 * all of them, and a carrier busy running threads does not hold the accept queue back, an
 * idle one accepts in its place. A burst of connects needs that: an acceptor stuck behind
 * the threads it spawned let the accept queue (--accept-count) overflow, and a client whose
 * handshake is dropped waits 1-3 s for a retransmission (README has the measurements), so
 * the queue holds --accept-count per carrier, what a listener each used to give. A
 * listener per carrier in one SO_REUSEPORT group, as nginx's `reuseport` does, spreads the
 * queue too, but any process of the same user may join such a group and take a share of
 * the connections; one socket keeps the port the server's alone. */
struct vserver_listener {
    struct server *s;
    int lfd;
};

/* An acceptor: a virtual thread parked in accept on its listener, handing each connection
 * to a new virtual thread, spread round-robin over the carriers. Ends when the runtime shuts
 * down. As in Tomcat with virtual threads, --max-connections still bounds the connections
 * held (Tomcat's LimitLatch; here polled every ms while at the limit, which is rare). */
static void vserver_acceptor(void *arg)
{
    struct vserver_listener *l = arg;
    struct server *s = l->s;
    int lfd = l->lfd;
    free(l);
    if (fcntl(lfd, F_SETFL, O_NONBLOCK) < 0 ||
        io_register_events(lfd, EPOLLIN | EPOLLET | EPOLLEXCLUSIVE) < 0)
        die("listener: %s", strerror(errno));
    for (;;) {
        while (LOAD(s->vconns) >= s->cfg->max_connections)
            if (vt_sleep_until(now_ns() + NS_PER_MS) < 0)
                goto cancelled;
        int fd = io_accept(lfd, -1);
        if (fd < 0) {
            if (errno == ECANCELED)
                break;
            if (errno == EMFILE || errno == ENFILE)
                vt_sleep_until(now_ns() + ACCEPT_BACKOFF_MS * NS_PER_MS);
            continue;
        }
        uint32_t addr = 0;
        int counted;
        if (server_admit(s, fd, &addr, &counted) < 0) {
            close(fd); /* one address holds its share: the rest stay for the others */
            continue;
        }
        SHARED_ADD(s->vconns, 1);
        struct conn *conn = conn_new(s, fd);
        conn->addr = addr;
        conn->counted = counted;
        vt_spawn_spread(vconn_main, conn);
    }
cancelled:
    io_close(lfd);
}

/* Start an acceptor on each carrier: carrier 0's on s->lfd, the others' on dups of it (while
 * one cannot be made, the ones made serve). */
static void vserver_listen(struct server *s)
{
    for (int i = 0; i < rt_carriers(); i++) {
        int lfd = i == 0 ? s->lfd : fcntl(s->lfd, F_DUPFD_CLOEXEC, 0);
        if (lfd < 0)
            break;
        struct vserver_listener *l = xmalloc(sizeof *l);
        l->s = s;
        l->lfd = lfd;
        vt_spawn_detached_on(i, vserver_acceptor, l);
    }
}

/* Bind the listening socket and start serving: the virtual-thread acceptor (backend, or
 * aggregator in virtual mode; the runtime must be started) or the platform pool. */
static int server_start(struct server *s, const struct config *cfg, route_fn route)
{
    memset(s, 0, sizeof *s);
    metrics_init();
    s->cfg = cfg;
    s->route = route;
    s->seed = 0x9E3779B97F4A7C15ULL;
    s->per_client = cfg->max_per_client >= 0 ? cfg->max_per_client
                                             : cfg->max_connections - cfg->max_connections / 4;
    pthread_mutex_init(&s->addr_mu, NULL);
    /* virtual: --accept-count per carrier, as when each had a listener (see vserver_listener) */
    int carriers = cfg->mode == MODE_VIRTUAL && rt_carriers() > 1 ? rt_carriers() : 1;
    int backlog = cfg->accept_count > INT_MAX / carriers ? INT_MAX : cfg->accept_count * carriers;
    s->lfd = io_listen(cfg->host, cfg->port, backlog, &s->port);
    if (s->lfd < 0)
        return -1;
    if (cfg->nbackends)
        ds_init(s);
    if (cfg->mode == MODE_PLATFORM) {
        pool_start(s); /* its poller sweeps the downstream pool */
        return 0;
    }
    vserver_listen(s);
    if (s->pools)
        vt_spawn_detached_on(0, ds_sweeper, s);
    return 0;
}

/* Stop a platform server (virtual servers stop with the runtime: rt_shutdown). */
static void server_stop(struct server *s)
{
    if (s->pool) {
        pool_stop(s);
        io_close(s->lfd);
    }
    ds_free(s);
    for (int i = 0; i < ADDR_NB; i++) /* the connections left are gone with the runtime */
        while (s->addr_buckets[i]) {
            struct addr_count *node = s->addr_buckets[i];
            s->addr_buckets[i] = node->next;
            free(node);
        }
    pthread_mutex_destroy(&s->addr_mu);
}

/* Run a server until SIGINT/SIGTERM, then stop it cleanly. */
static int serve_until_signal(struct config *cfg, route_fn route, const char *what)
{
    struct server s;
    signals_block();
    if (cfg->mode == MODE_VIRTUAL)
        rt_start(cfg->carriers);
    else
        raise_fd_limit();
    if (server_start(&s, cfg, route) < 0)
        die("cannot listen on %s:%d: %s", cfg->host, cfg->port, strerror(errno));
    fprintf(stderr, "aggregator %s: listening on %s:%d (%s%s)\n", what, cfg->host, s.port,
            cfg->mode == MODE_VIRTUAL ? "virtual threads" : "platform threads",
            cfg->pin ? ", pinned" : "");
    signals_wait_until(-1);
    fprintf(stderr, "aggregator %s: stopping\n", what);
    if (cfg->mode == MODE_VIRTUAL) {
        rt_shutdown();
        rt_join();
    }
    server_stop(&s);
    return 0;
}

/* ---- II.9 Bearer tokens ---- */

/* serve --auth: /aggregate wants "Authorization: Bearer HEADER.CLAIMS.SIGNATURE", a JWT (RFC
 * 7519) as Spring Security's resource server checks it on every request, the cost a secured
 * service pays per request in CPU. Each part is base64url without padding (RFC 7515 2). The
 * algorithm is the server's, fixed by --auth, never the token's: a header whose "alg" is
 * another ("none"; "HS256" against an RSA key, the confusion of a public key used as an HMAC
 * secret) is refused before any signature is computed. Signatures are OpenSSL's libcrypto:
 * HMAC-SHA256 compared in constant time (CRYPTO_memcmp: the time taken says nothing of how
 * much matched), RSA by EVP_DigestVerify. Then the claims: "exp" required and "nbf" if
 * present, numbers of seconds, with AUTH_SKEW_S either way; "iss" and "aud" (a string or an
 * array of strings) as configured. Anything wrong is the same 401 with WWW-Authenticate:
 * Bearer error="invalid_token" and no detail; an Authorization header over AUTH_MAX_TOKEN
 * bytes is 431. java/Aggregator.java's BearerAuth does the same with the JDK's crypto. */
#define AUTH_SKEW_S    30   /* clock skew allowed on exp and nbf, s */
#define AUTH_MAX_TOKEN 4096 /* the longest Authorization value read, bytes */
#define AUTH_MIN_HMAC  32   /* an HS256 key's least bytes (RFC 7518 3.2: the hash's size) */

enum { AUTH_HS256, AUTH_RS256 };
static const char *const auth_algs[] = {"HS256", "RS256"};
static const char *const auth_kinds[] = {"hs256", "rs256"};

struct auth {
    int alg;               /* AUTH_HS256 or AUTH_RS256, from --auth */
    unsigned char *secret; /* hs256: the key file's bytes */
    size_t secret_len;
    EVP_PKEY *key;                 /* rs256: the public key (serve) or private key (load) */
    const char *issuer, *audience; /* NULL: not checked (serve), not claimed (load) */
};

/* -- base64url (RFC 4648 5), no padding, strictly: the canonical text of its bytes -- */

static int b64url_value(unsigned char c)
{
    return c >= 'A' && c <= 'Z'   ? c - 'A'
           : c >= 'a' && c <= 'z' ? c - 'a' + 26
           : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '-'             ? 62
           : c == '_'             ? 63
                                  : -1;
}

/* Decode s[0, n) into out (at least n * 3 / 4 bytes); the length, or -1 for any byte outside
 * the alphabet, padding, a length no encoding has (n % 4 == 1) or unused bits not zero. */
static long b64url_decode(const char *s, size_t n, unsigned char *out)
{
    uint32_t acc = 0;
    int bits = 0;
    long len = 0;
    if (n % 4 == 1)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int v = b64url_value((unsigned char)s[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6 | (uint32_t)v) & 0xffffff;
        if ((bits += 6) >= 8) {
            bits -= 8;
            out[len++] = (unsigned char)(acc >> bits);
        }
    }
    return bits && (acc & ((1u << bits) - 1)) ? -1 : len;
}

static void b64url_encode(struct sbuf *out, const unsigned char *p, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = acc << 8 | p[i];
        for (bits += 8; bits >= 6; bits -= 6)
            sbuf_add(out, &abc[(acc >> (bits - 6)) & 63], 1);
    }
    if (bits)
        sbuf_add(out, &abc[(acc << (6 - bits)) & 63], 1);
}

/* -- jwt_json: RFC 8259, just what a token needs (tests/fuzz_jwt.c fuzzes it) --
 * One object, read whole: its members' names and the spans of their values, nested values
 * checked and skipped. A duplicate name is refused at every depth (which claim would win is
 * how two parsers are made to disagree), as are control bytes in strings, a lone surrogate,
 * and more than JWT_MAX_MEMBERS members or JWT_MAX_DEPTH levels. */
#define JWT_MAX_MEMBERS 64
#define JWT_MAX_DEPTH   16

enum jwt_type { JWT_STRING, JWT_NUMBER, JWT_LITERAL, JWT_ARRAY, JWT_OBJECT };

struct jwt_member {
    const char *name, *value; /* spans of the text: the name inside its quotes, the value */
    size_t name_len, value_len;
    int type; /* enum jwt_type */
};

struct jwt_json {
    const char *p, *end;
    struct jwt_member m[JWT_MAX_MEMBERS]; /* the top object's members */
    int n;
};

static void jwt_space(struct jwt_json *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'))
        j->p++;
}

static int jwt_hex4(const char *p, const char *end, unsigned *u)
{
    *u = 0;
    for (int i = 0; i < 4; i++) {
        if (p + i >= end || !isxdigit((unsigned char)p[i]))
            return -1;
        *u = *u * 16 +
             (unsigned)(isdigit((unsigned char)p[i]) ? p[i] - '0' : (p[i] | 0x20) - 'a' + 10);
    }
    return 0;
}

/* A string's text s[0, n) (inside its quotes, escapes still in it) decoded into out (at most
 * n bytes: no escape decodes longer than itself), as UTF-8. Returns its length, or -1. */
static long jwt_unescape(const char *s, size_t n, char *out)
{
    long len = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20)
            return -1;
        if (c != '\\') {
            out[len++] = (char)c;
            continue;
        }
        if (++i >= n)
            return -1;
        const char *esc = strchr("\"\\/bfnrt", s[i]);
        if (esc && s[i]) {
            out[len++] = "\"\\/\b\f\n\r\t"[esc - "\"\\/bfnrt"];
            continue;
        }
        unsigned u, lo;
        if (s[i] != 'u' || jwt_hex4(s + i + 1, s + n, &u) < 0)
            return -1;
        i += 4;
        if (u >= 0xdc00 && u <= 0xdfff)
            return -1;                    /* a low surrogate first */
        if (u >= 0xd800 && u <= 0xdbff) { /* a pair: \uD8xx\uDCxx */
            if (i + 6 >= n || s[i + 1] != '\\' || s[i + 2] != 'u' ||
                jwt_hex4(s + i + 3, s + n, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
                return -1;
            u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            i += 6;
        }
        if (u < 0x80) {
            out[len++] = (char)u;
        } else if (u < 0x800) {
            out[len++] = (char)(0xc0 | u >> 6);
            out[len++] = (char)(0x80 | (u & 63));
        } else if (u < 0x10000) {
            out[len++] = (char)(0xe0 | u >> 12);
            out[len++] = (char)(0x80 | (u >> 6 & 63));
            out[len++] = (char)(0x80 | (u & 63));
        } else {
            out[len++] = (char)(0xf0 | u >> 18);
            out[len++] = (char)(0x80 | (u >> 12 & 63));
            out[len++] = (char)(0x80 | (u >> 6 & 63));
            out[len++] = (char)(0x80 | (u & 63));
        }
    }
    return len;
}

/* Whether two strings' texts decode to the same bytes (without an escape, they are them). */
static int jwt_same(const char *a, size_t na, const char *b, size_t nb)
{
    if (!memchr(a, '\\', na) && !memchr(b, '\\', nb))
        return na == nb && !memcmp(a, b, na);
    char *da = xmalloc(na + 1), *db = xmalloc(nb + 1);
    long la = jwt_unescape(a, na, da), lb = jwt_unescape(b, nb, db);
    int same = la >= 0 && la == lb && !memcmp(da, db, (size_t)la);
    free(da);
    free(db);
    return same;
}

/* A string at j->p (its opening quote): its text's span, checked; -1 if it is not one. */
static int jwt_string(struct jwt_json *j, const char **s, size_t *n)
{
    if (j->p >= j->end || *j->p != '"')
        return -1;
    const char *q = ++j->p;
    while (q < j->end && *q != '"')
        q += *q == '\\' && q + 1 < j->end ? 2 : 1;
    if (q >= j->end)
        return -1;
    *s = j->p;
    *n = (size_t)(q - j->p);
    char *tmp = xmalloc(*n + 1);
    long ok = jwt_unescape(*s, *n, tmp);
    free(tmp);
    j->p = q + 1;
    return ok < 0 ? -1 : 0;
}

/* A number (RFC 8259 6: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][-+]?[0-9]+)?) at j->p. */
static int jwt_number(struct jwt_json *j)
{
    const char *p = j->p, *e = j->end;
    p += p < e && *p == '-';
    if (p < e && *p == '0')
        p++;
    else if (p < e && *p >= '1' && *p <= '9')
        while (p < e && isdigit((unsigned char)*p))
            p++;
    else
        return -1;
    if (p < e && *p == '.') {
        if (++p >= e || !isdigit((unsigned char)*p))
            return -1;
        while (p < e && isdigit((unsigned char)*p))
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        p += p < e && (*p == '+' || *p == '-');
        if (p >= e || !isdigit((unsigned char)*p))
            return -1;
        while (p < e && isdigit((unsigned char)*p))
            p++;
    }
    j->p = p;
    return 0;
}

static int jwt_object(struct jwt_json *j, int depth, struct jwt_member *m, int *n);

/* Any value at j->p: checked, skipped, its type into *type. */
static int jwt_value(struct jwt_json *j, int depth, int *type)
{
    static const char *const words[] = {"true", "false", "null"};
    const char *s;
    size_t n;
    jwt_space(j);
    if (j->p >= j->end || depth > JWT_MAX_DEPTH)
        return -1;
    if (*j->p == '{') {
        struct jwt_member *inner = xcalloc(JWT_MAX_MEMBERS, sizeof *inner);
        int k, rc = jwt_object(j, depth + 1, inner, &k);
        free(inner);
        *type = JWT_OBJECT;
        return rc;
    }
    if (*j->p == '[') {
        *type = JWT_ARRAY;
        j->p++;
        jwt_space(j);
        if (j->p < j->end && *j->p == ']')
            return j->p++, 0;
        for (int k = 0; k < JWT_MAX_MEMBERS; k++) {
            int t;
            if (jwt_value(j, depth + 1, &t) < 0)
                return -1;
            jwt_space(j);
            if (j->p < j->end && *j->p == ']')
                return j->p++, 0;
            if (j->p >= j->end || *j->p++ != ',')
                return -1;
        }
        return -1;
    }
    if (*j->p == '"')
        return *type = JWT_STRING, jwt_string(j, &s, &n);
    for (size_t w = 0; w < ARRAY_LEN(words); w++)
        if ((size_t)(j->end - j->p) >= strlen(words[w]) &&
            !memcmp(j->p, words[w], strlen(words[w]))) {
            j->p += strlen(words[w]);
            return *type = JWT_LITERAL, 0;
        }
    return *type = JWT_NUMBER, jwt_number(j);
}

/* An object at j->p: its members into m[0, *n), no name twice. */
static int jwt_object(struct jwt_json *j, int depth, struct jwt_member *m, int *n)
{
    *n = 0;
    jwt_space(j);
    if (j->p >= j->end || *j->p++ != '{')
        return -1;
    jwt_space(j);
    if (j->p < j->end && *j->p == '}')
        return j->p++, 0;
    for (;;) {
        if (*n >= JWT_MAX_MEMBERS)
            return -1;
        struct jwt_member *x = &m[(*n)++];
        jwt_space(j);
        if (jwt_string(j, &x->name, &x->name_len) < 0)
            return -1;
        for (int i = 0; i < *n - 1; i++)
            if (jwt_same(m[i].name, m[i].name_len, x->name, x->name_len))
                return -1; /* a duplicate name */
        jwt_space(j);
        if (j->p >= j->end || *j->p++ != ':')
            return -1;
        jwt_space(j);
        x->value = j->p;
        if (jwt_value(j, depth, &x->type) < 0)
            return -1;
        x->value_len = (size_t)(j->p - x->value);
        jwt_space(j);
        if (j->p < j->end && *j->p == '}')
            return j->p++, 0;
        if (j->p >= j->end || *j->p++ != ',')
            return -1;
    }
}

/* Parse the bytes [p, p + n) as one JSON object and nothing else into j. Returns 0 or -1. */
static int jwt_parse(struct jwt_json *j, const char *p, size_t n)
{
    j->p = p;
    j->end = p + n;
    if (jwt_object(j, 0, j->m, &j->n) < 0)
        return -1;
    jwt_space(j);
    return j->p == j->end ? 0 : -1;
}

/* The member named name, or NULL. */
static const struct jwt_member *jwt_get(const struct jwt_json *j, const char *name)
{
    for (int i = 0; i < j->n; i++)
        if (jwt_same(j->m[i].name, j->m[i].name_len, name, strlen(name)))
            return &j->m[i];
    return NULL;
}

/* Whether a member is the string want. */
static int jwt_is(const struct jwt_member *x, const char *want)
{
    return x && x->type == JWT_STRING &&
           jwt_same(x->value + 1, x->value_len - 2, want, strlen(want));
}

/* Whether a member is the string want or an array holding it. */
static int jwt_holds(const struct jwt_member *x, const char *want)
{
    if (!x || x->type != JWT_ARRAY)
        return jwt_is(x, want);
    struct jwt_json j = {.p = x->value + 1, .end = x->value + x->value_len - 1};
    for (;;) { /* the array was checked whole: only its strings are looked at */
        jwt_space(&j);
        struct jwt_member e = {.value = j.p};
        if (j.p >= j.end || jwt_value(&j, 0, &e.type) < 0)
            return 0;
        e.value_len = (size_t)(j.p - e.value);
        if (jwt_is(&e, want))
            return 1;
        jwt_space(&j);
        if (j.p >= j.end || *j.p++ != ',')
            return 0;
    }
}

/* A member's number, into *v; -1 if it is not a number. */
static int jwt_num(const struct jwt_member *x, double *v)
{
    char buf[64];
    if (!x || x->type != JWT_NUMBER || x->value_len >= sizeof buf)
        return -1;
    memcpy(buf, x->value, x->value_len);
    buf[x->value_len] = '\0';
    *v = strtod(buf, NULL);
    return 0;
}

/* -- the check and the signature -- */

/* Whether sig is the signature of the signing input in[0, n) under a's key. */
static int auth_signature_ok(const struct auth *a, const char *in, size_t n,
                             const unsigned char *sig, size_t sig_len)
{
    if (a->alg == AUTH_HS256) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned mac_len = 0;
        if (!HMAC(EVP_sha256(), a->secret, (int)a->secret_len, (const unsigned char *)in, n, mac,
                  &mac_len))
            return 0;
        return sig_len == mac_len && CRYPTO_memcmp(mac, sig, mac_len) == 0;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, a->key) == 1 &&
             EVP_DigestVerify(ctx, sig, sig_len, (const unsigned char *)in, n) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error(); /* a refused signature leaves its reason on this thread's queue */
    return ok;
}

/* Decode a part of a token into a fresh buffer (*out, the caller frees); its length or -1. */
static long auth_part(const char *p, size_t n, unsigned char **out)
{
    *out = xmalloc(n + 1);
    return b64url_decode(p, n, *out);
}

/* The token tok[0, n) (after "Bearer "): 200 if it passes a's checks at now_s, else 401. */
static int auth_token(const struct auth *a, const char *tok, size_t n, double now_s)
{
    const char *d1 = memchr(tok, '.', n),
               *d2 = d1 ? memchr(d1 + 1, '.', n - (size_t)(d1 + 1 - tok)) : NULL;
    if (!d2 || memchr(d2 + 1, '.', n - (size_t)(d2 + 1 - tok)))
        return 401; /* three parts, exactly */
    unsigned char *head = NULL, *claims = NULL, *sig = NULL;
    struct jwt_json *j = xcalloc(1, sizeof *j);
    long nh = auth_part(tok, (size_t)(d1 - tok), &head),
         nc = auth_part(d1 + 1, (size_t)(d2 - d1 - 1), &claims),
         ns = auth_part(d2 + 1, n - (size_t)(d2 + 1 - tok), &sig);
    int ok = nh > 0 && nc > 0 && ns > 0 && jwt_parse(j, (char *)head, (size_t)nh) == 0 &&
             jwt_is(jwt_get(j, "alg"), auth_algs[a->alg]) &&
             auth_signature_ok(a, tok, (size_t)(d2 - tok), sig, (size_t)ns) &&
             jwt_parse(j, (char *)claims, (size_t)nc) == 0;
    double exp, nbf;
    const struct jwt_member *nb = ok ? jwt_get(j, "nbf") : NULL;
    ok = ok && jwt_num(jwt_get(j, "exp"), &exp) == 0 && now_s < exp + AUTH_SKEW_S &&
         (!nb || (jwt_num(nb, &nbf) == 0 && now_s >= nbf - AUTH_SKEW_S)) &&
         (!a->issuer || jwt_is(jwt_get(j, "iss"), a->issuer)) &&
         (!a->audience || jwt_holds(jwt_get(j, "aud"), a->audience));
    free(head);
    free(claims);
    free(sig);
    free(j);
    return ok ? 200 : 401;
}

/* The request's Authorization: 200 if it carries a token a accepts, 431 if it is over
 * AUTH_MAX_TOKEN bytes, else 401 (none, two, not Bearer, or a bad token). */
static int auth_check(const struct auth *a, const struct http_request *rq)
{
    const struct http_head *h = &rq->h;
    if (h->nauth != 1)
        return 401;
    if (h->auth_len > AUTH_MAX_TOKEN)
        return 431;
    if (h->auth_len < 7 || strncmp(h->auth, "Bearer ", 7))
        return 401;
    return auth_token(a, h->auth + 7, h->auth_len - 7, (double)time(NULL));
}

/* The refusal: 401 with the challenge and no detail (RFC 6750 3), or 431. */
static int auth_refuse(struct sbuf *out, int status, int keep)
{
    const char *reason = http_reasons[http_status_index(status)];
    http_write_head_with(out, status, "text/plain", strlen(reason), keep,
                         status == 401 ? "WWW-Authenticate: Bearer error=\"invalid_token\"\r\n"
                                       : "");
    sbuf_add_str(out, reason);
    return status;
}

/* A key file's bytes (at most 1 MiB), or NULL with errno. */
static unsigned char *auth_read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *p = xmalloc(1 << 20);
    *n = fread(p, 1, 1 << 20, f);
    fclose(f);
    return p;
}

/* --auth hs256:KEYFILE | rs256:PEM into a (private: the signing side, load; else the public
 * key, serve). Returns 0, or -1 with why. */
static int auth_load(struct auth *a, const char *spec, int private, char *why, size_t len)
{
    const char *colon = strchr(spec, ':');
    memset(a, 0, sizeof *a);
    char kind[8] = "";
    if (colon)
        snprintf(kind, sizeof kind, "%.*s", (int)(colon - spec < 7 ? colon - spec : 7), spec);
    if (!colon || names_find(auth_kinds, ARRAY_LEN(auth_kinds), kind, &a->alg) < 0)
        return snprintf(why, len, "--auth takes hs256:KEYFILE or rs256:KEY.pem, not '%s'", spec),
               -1;
    if (a->alg == AUTH_HS256) {
        a->secret = auth_read_file(colon + 1, &a->secret_len);
        if (!a->secret)
            return snprintf(why, len, "%s: %s", colon + 1, strerror(errno)), -1;
        if (a->secret_len >= AUTH_MIN_HMAC)
            return 0;
        snprintf(why, len, "--auth hs256: the key needs >= %d bytes (RFC 7518 3.2), %s has %zu",
                 AUTH_MIN_HMAC, colon + 1, a->secret_len);
        free(a->secret);
        return -1;
    }
    FILE *f = fopen(colon + 1, "r");
    if (!f)
        return snprintf(why, len, "%s: %s", colon + 1, strerror(errno)), -1;
    a->key =
        private ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : PEM_read_PUBKEY(f, NULL, NULL, NULL);
    fclose(f);
    if (a->key && EVP_PKEY_get_base_id(a->key) == EVP_PKEY_RSA)
        return 0;
    EVP_PKEY_free(a->key);
    ERR_clear_error();
    return snprintf(why, len, "%s: not an RSA %s key in PEM", colon + 1,
                    private ? "private" : "public"),
           -1;
}

static void auth_free(struct auth *a)
{
    free(a->secret);
    EVP_PKEY_free(a->key);
    memset(a, 0, sizeof *a);
}

/* A new key of alg into a (zeroed first): an HS256 secret of AUTH_MIN_HMAC random bytes, or
 * an RSA-2048 key pair (the signing side's; auth_public gives the checking side's). Returns
 * 0, or -1 (a freed). */
static int auth_make(struct auth *a, int alg)
{
    memset(a, 0, sizeof *a);
    a->alg = alg;
    if (alg == AUTH_RS256)
        return (a->key = EVP_RSA_gen(2048)) ? 0 : -1;
    a->secret = xmalloc(AUTH_MIN_HMAC);
    a->secret_len = AUTH_MIN_HMAC;
    if (RAND_bytes(a->secret, AUTH_MIN_HMAC) == 1)
        return 0;
    auth_free(a);
    return -1;
}

/* The checking side of signing key a into pub (zeroed first): the same secret, or the RSA
 * key's public half alone, through its PEM text as serve reads it. Returns 0, or -1. */
static int auth_public(const struct auth *a, struct auth *pub)
{
    memset(pub, 0, sizeof *pub);
    pub->alg = a->alg;
    if (a->alg == AUTH_HS256) {
        pub->secret = xmalloc(a->secret_len);
        memcpy(pub->secret, a->secret, a->secret_len);
        pub->secret_len = a->secret_len;
        return 0;
    }
    BIO *b = BIO_new(BIO_s_mem());
    if (b && PEM_write_bio_PUBKEY(b, a->key) == 1)
        pub->key = PEM_read_bio_PUBKEY(b, NULL, NULL, NULL);
    BIO_free(b);
    return pub->key ? 0 : -1;
}

/* -- the signing side (load, bench): a token per user -- */

/* A token for user `user`, valid from now_s for life_s seconds, into out. */
static void auth_mint(const struct auth *a, int user, int64_t now_s, int life_s, struct sbuf *out)
{
    char claims[512];
    struct sbuf input = {0};
    int n = snprintf(claims, sizeof claims, "{\"sub\":\"user-%d\",\"iat\":%lld,\"exp\":%lld", user,
                     (long long)now_s, (long long)(now_s + life_s));
    if (a->issuer)
        n += snprintf(claims + n, sizeof claims - (size_t)n, ",\"iss\":\"%s\"", a->issuer);
    if (a->audience)
        n += snprintf(claims + n, sizeof claims - (size_t)n, ",\"aud\":\"%s\"", a->audience);
    snprintf(claims + n, sizeof claims - (size_t)n, "}");
    char head[64];
    snprintf(head, sizeof head, "{\"alg\":\"%s\",\"typ\":\"JWT\"}", auth_algs[a->alg]);
    b64url_encode(&input, (const unsigned char *)head, strlen(head));
    sbuf_add(&input, ".", 1);
    b64url_encode(&input, (const unsigned char *)claims, strlen(claims));
    unsigned char sig[1024];
    size_t sig_len = sizeof sig;
    unsigned mac_len = 0;
    if (a->alg == AUTH_HS256) {
        HMAC(EVP_sha256(), a->secret, (int)a->secret_len, (const unsigned char *)input.p, input.len,
             sig, &mac_len);
        sig_len = mac_len;
    } else {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        if (!ctx || EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, a->key) != 1 ||
            EVP_DigestSign(ctx, sig, &sig_len, (const unsigned char *)input.p, input.len) != 1)
            sig_len = 0;
        EVP_MD_CTX_free(ctx);
    }
    sbuf_add(out, input.p, input.len);
    sbuf_add(out, ".", 1);
    b64url_encode(out, sig, sig_len);
    sbuf_free(&input);
}

/* ==== Part III. Lab tools ==== */

/* The load generator, the benchmark grid that runs the service and the load generator as
 * child processes, the microbench of the runtime, and calibrate, which turns measurements
 * into the simulator's scenario keys. They run on the runtime of Part I (the load
 * generator's users are virtual threads) and spawn this same binary as their children.
 * Tests: tests/test_aggregator.c (test_hist, test_ci95, test_load_interval, test_cal_trust),
 * tests/test_faults.c (microbench --json, bench's port wall with --timeline),
 * tests/test_layout.sh (the histogram is sim.c's text), tests/test_java.sh (bench --server
 * java), make check-model (calibrate and bench against ./sim --validate). */

/* ---- III.1 Statistics ---- */

/* Latencies here are microseconds, up to 2^41 us (about 25 days). */
#define HIST_MAX_MSB 40

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

/* A CSV's header from its column table (res_cols, tl_cols): the names joined by commas, in
 * the table's order, so that the writer's columns and the reader's are one list. */
static void csv_write_header(FILE *f, const struct csv_col *cols, int n)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", cols[i].name, i + 1 < n ? "," : "\n");
}

/* A row of that CSV: column i is word[i] for a word column, else num[i] with the column's
 * digits (%g for -1), and exactly -1 in a column that may be unknown is written "-1", as
 * ./sim --validate reads it. */
static void csv_write_row(FILE *f, const struct csv_col *cols, int n, const double *num,
                          const char *const *word)
{
    for (int i = 0; i < n; i++) {
        const char *sep = i + 1 < n ? "," : "\n";
        if (cols[i].type == CSV_WORD)
            fprintf(f, "%s%s", word[i], sep);
        else if ((cols[i].unknown && num[i] == -1) || cols[i].digits < 0)
            fprintf(f, "%g%s", num[i], sep);
        else
            fprintf(f, "%.*f%s", cols[i].digits, num[i], sep);
    }
}

/* The mean of n measurements, its 95% interval mean -+ t(0.975, n-1) s / sqrt(n) (s the
 * sample standard deviation: the measurements are taken as independent draws of one normal),
 * and the extremes. With one measurement the interval is the point itself: nothing says how
 * wide it is. */
struct ci95 {
    double mean, lo, hi, min, max;
};

static struct ci95 ci95_of(const double *x, int n)
{
    struct ci95 c = {0, 0, 0, n ? x[0] : 0, n ? x[0] : 0};
    for (int i = 0; i < n; i++) {
        c.mean += x[i] / n;
        c.min = x[i] < c.min ? x[i] : c.min;
        c.max = x[i] > c.max ? x[i] : c.max;
    }
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (x[i] - c.mean) * (x[i] - c.mean);
    double half = n > 1 ? stat_t975(n - 1) * sqrt(ss / (n - 1)) / sqrt(n) : 0;
    c.lo = c.mean - half;
    c.hi = c.mean + half;
    return c;
}

/* ---- III.2 Load generator ---- */

/* Error kinds, one table for counting and printing. */
#define LOAD_ERRORS(X)                                                                             \
    X(LOAD_ERR_CONNECT, "connect")                                                                 \
    X(LOAD_ERR_IO, "read/write")                                                                   \
    X(LOAD_ERR_TIMEOUT, "timeout")                                                                 \
    X(LOAD_ERR_STATUS, "status") /* a non-2xx answer */                                            \
    X(LOAD_ERR_PARSE, "parse")

enum load_err {
#define X(e, name) e,
    LOAD_ERRORS(X)
#undef X
        LOAD_NERR
};
static const char *const load_err_names[] = {
#define X(e, name) name,
    LOAD_ERRORS(X)
#undef X
};

/* The longest window and warm-up a load takes, s: a day (its per-second counters are sized
 * by them). */
enum { LOAD_MAX_S = 86400 };

struct load_cfg {
    struct sockaddr_in addr; /* target */
    char url[256];           /* as given, for the report */
    char path[200];          /* path and query sent */
    int users;               /* N: concurrent users (connections) */
    double duration_s;       /* measured window */
    double warmup_s; /* traffic before the window opens (connects, warm pools; not counted) */
    int think_ms;    /* Z: think time between a user's requests (closed loop) */
    double rate;     /* > 0: open loop, requests/s in total; 0: closed loop */
    int timeout_ms;  /* per request */
    int carriers;    /* carrier threads of the generator */
    int json;        /* print JSON instead of the wrk-like text */
    int per_second;  /* JSON: add per_s, the answers and errors of each second since the start */
    const struct auth *auth; /* --auth: each user sends its own bearer token (II.9), or NULL */
};

/* A user's token lives LOAD_TOKEN_LIFE_S (Keycloak's default access-token lifespan) and is
 * minted again LOAD_TOKEN_RENEW_S before it ends, as an OAuth client refreshes its own: the
 * server sees a token per user, not one for all, and never an expired one. */
#define LOAD_TOKEN_LIFE_S  300
#define LOAD_TOKEN_RENEW_S 60

/* Counters of one carrier's users: no sharing while the test runs, merged at the end. */
struct load_stats {
    struct hist h;      /* latencies in µs */
    struct hist hf;     /* the failed requests' (errors of every kind), µs: how long a
                         * failure took to come, which a fan-out that cancels shortens */
    uint64_t completed; /* answers received inside the window */
    uint64_t in_flight; /* requests without an answer when the window ended (not errors) */
    uint64_t errors[LOAD_NERR];
    /* for each whole second since the users started, warm-up included, the 2xx answers
     * ([s][0]) and the errors of every kind ([s][1]) received in it: the throughput's
     * interval, and --per-second's per_s */
    uint32_t (*sec)[2];
    int nsec; /* the merged stats' length of sec */
};

struct load {
    const struct load_cfg *cfg;
    char req[256]; /* the request bytes, the same for every call */
    size_t req_len;
    int64_t t0, t_end;              /* window [t0, t_end), ns */
    int64_t t_begin;                /* when the users started (the warm-up's start), ns */
    int nsec;                       /* seconds in [t_begin, t_end), rounded up */
    struct load_stats *per_carrier; /* one per carrier */
    int stop;                       /* atomic: stop early (Ctrl-C) */
    pthread_mutex_t mu;             /* guards done */
    pthread_cond_t cv;
    int done; /* users finished */
};

struct load_user {
    struct load *L;
    int idx;         /* 0..users-1: its slots in an open-loop schedule */
    struct sbuf req; /* --auth: its request, with its token (else L->req is) */
    int64_t renew_s; /* --auth: when its token is minted again (wall clock, s) */
};

/* The request a user sends: the shared one, or with --auth its own, its token minted anew
 * when due. */
static void load_user_request(struct load_user *u, const char **req, size_t *len)
{
    const struct load_cfg *cfg = u->L->cfg;
    int64_t now_s = (int64_t)time(NULL);
    *req = u->L->req;
    *len = u->L->req_len;
    if (!cfg->auth)
        return;
    if (!u->req.len || now_s >= u->renew_s) {
        u->req.len = 0;
        sbuf_add(&u->req, u->L->req, u->L->req_len - 2); /* up to the blank line */
        sbuf_add_str(&u->req, "Authorization: Bearer ");
        auth_mint(cfg->auth, u->idx, now_s, LOAD_TOKEN_LIFE_S, &u->req);
        sbuf_add_str(&u->req, "\r\n\r\n");
        u->renew_s = now_s + LOAD_TOKEN_LIFE_S - LOAD_TOKEN_RENEW_S;
    }
    *req = u->req.p;
    *len = u->req.len;
}

static int load_over(struct load *L)
{
    return now_ns() >= L->t_end || LOAD(L->stop);
}

/* Count an answer (ok) or an error in the second it came, on the calling carrier's
 * counters (written by that carrier only, as the rest of its stats). */
static void load_tick(struct load *L, int ok)
{
    int64_t i = (now_ns() - L->t_begin) / NS_PER_S;
    if (i >= 0 && i < L->nsec)
        L->per_carrier[rt_self()].sec[i][!ok]++;
}

/* A user's wait (a request, a think time) ends at the window's end at the latest: the run
 * ends on time whatever --timeout-ms and --think-ms are, and while the window is open the
 * signals are waited for (load_run_cli); after it, nobody would see them. */
static int64_t load_until(const struct load *L, int64_t ms)
{
    int64_t t = now_ns() + ms * NS_PER_MS;
    return t < L->t_end ? t : L->t_end;
}

/* One request on the user's connection (opened if needed). Returns the error kind, or -1
 * for success with *lat_ns measured from `intended`. */
static int load_one(struct load *L, struct load_user *u, struct client **clp, int64_t intended,
                    int64_t *lat_ns)
{
    const struct load_cfg *cfg = L->cfg;
    int64_t deadline = load_until(L, cfg->timeout_ms);
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = *clp != NULL;
        if (!*clp && !(*clp = client_open(&cfg->addr, deadline)))
            return errno == ECANCELED ? LOAD_ERR_IO : LOAD_ERR_CONNECT;
        struct http_response rs;
        const char *req;
        size_t req_len;
        load_user_request(u, &req, &req_len);
        long r = client_exchange(*clp, req, req_len, deadline, &rs);
        if (r > 0) {
            *lat_ns = now_ns() - intended;
            client_consume(*clp, (size_t)r);
            if (!rs.keep_alive) {
                client_close(*clp);
                *clp = NULL;
            }
            return rs.status >= 200 && rs.status < 300 ? -1 : LOAD_ERR_STATUS;
        }
        /* cut by the window's end: a reset lets a server that queued the request drop it; a
         * FIN would be a half-close, still owed the answer (pool_client_gone) */
        if (now_ns() >= L->t_end || LOAD(L->stop))
            client_reset_on_close((*clp)->fd);
        client_close(*clp);
        *clp = NULL;
        if (r == CX_STALE && reused)
            continue;
        return r == CX_TIMEOUT ? LOAD_ERR_TIMEOUT : r == CX_BAD ? LOAD_ERR_PARSE : LOAD_ERR_IO;
    }
    return LOAD_ERR_IO;
}

/* A user: closed loop (send, wait for the answer, think, repeat) or, with a rate, its share
 * of an open-loop schedule: user i owns send times t0 + (i + k*N)/rate. Latency counts from
 * the intended send time, so a slow server cannot hide its queue by delaying our sends (no
 * coordinated omission, as in wrk2). */
static void load_user_main(void *arg)
{
    struct load_user *u = arg;
    struct load *L = u->L;
    const struct load_cfg *cfg = L->cfg;
    /* The stats of the carrier running us now, never kept across a park: the thread may
     * be stolen, and each carrier's stats are written by that carrier only. */
#define LOAD_STATS (&L->per_carrier[rt_self()])
    /* Connect first (a full listen backlog can make this take seconds: SYN retries). */
    struct client *cl = client_open(&cfg->addr, load_until(L, cfg->timeout_ms));
    if (!cl && now_ns() >= L->t0 && !load_over(L))
        LOAD_STATS->errors[LOAD_ERR_CONNECT]++;
    if (!cl)
        load_tick(L, 0);
    /* Closed-loop users send from the start and count only the answers inside the window,
     * so it opens on a steady state; an open-loop schedule starts at the window. The closed
     * loop's users start evenly spread over the warm-up (a ramp-up, as JMeter's): users who
     * start together against a constant service time stay in lockstep, their answers come in
     * bursts of N, and a window would count 8 or 9 bursts by where its ends fall. */
    int64_t first = cfg->rate > 0 ? L->t0 : L->t_begin + (L->t0 - L->t_begin) * u->idx / cfg->users;
    if (vt_sleep_until(first) == 0) {
        for (uint64_t k = 0; !load_over(L); k++) {
            int64_t intended = now_ns();
            if (cfg->rate > 0) {
                intended = L->t0 +
                           (int64_t)((double)(u->idx + k * (uint64_t)cfg->users) * 1e9 / cfg->rate);
                if (intended >= L->t_end || (intended > now_ns() && vt_sleep_until(intended) < 0))
                    break;
            }
            int64_t lat = 0;
            int err = load_one(L, u, &cl, intended, &lat);
            if (now_ns() >= L->t_end || LOAD(L->stop)) {
                /* cut by the window's end (or a signal): unanswered, in flight (load_one has
                 * reset its connection) */
                LOAD_STATS->in_flight += err == LOAD_ERR_TIMEOUT || err == LOAD_ERR_IO;
                break; /* an answer after the window: not counted */
            }
            load_tick(L, err < 0);
            int counted = now_ns() >= L->t0; /* warm-up: not counted either */
            if (err >= 0) {
                LOAD_STATS->errors[err] += (uint64_t)counted;
                if (counted)
                    hist_add(&LOAD_STATS->hf, (uint64_t)((now_ns() - intended) / 1000));
                if (err == LOAD_ERR_CONNECT && vt_sleep_until(now_ns() + 10 * NS_PER_MS) < 0)
                    break; /* no spin */
            } else if (counted) {
                LOAD_STATS->completed++;
                hist_add(&LOAD_STATS->h, (uint64_t)(lat / 1000));
            }
            if (cfg->think_ms > 0 && vt_sleep_until(load_until(L, cfg->think_ms)) < 0)
                break;
        }
    }
#undef LOAD_STATS
    client_close(cl);
    pthread_mutex_lock(&L->mu);
    L->done++;
    pthread_cond_signal(&L->cv);
    pthread_mutex_unlock(&L->mu);
    sbuf_free(&u->req);
    free(u);
}

/* Start the users on the (running) runtime; the window opens warmup_s later. */
static void load_start(struct load *L, const struct load_cfg *cfg)
{
    memset(L, 0, sizeof *L);
    L->cfg = cfg;
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &cfg->addr.sin_addr, host, sizeof host);
    L->req_len = (size_t)snprintf(L->req, sizeof L->req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n",
                                  cfg->path, host, ntohs(cfg->addr.sin_port));
    L->per_carrier = xcalloc((size_t)rt_carriers(), sizeof *L->per_carrier);
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    /* With --auth each user's first token is minted here, before the clock starts: a client
     * population holds its tokens already, and signing one (an RSA signature takes about a
     * millisecond of CPU) is the client's cost, which a user's first request must not wait
     * behind on the generator's carriers. */
    struct load_user **users = xcalloc((size_t)cfg->users, sizeof *users);
    for (int i = 0; i < cfg->users; i++) {
        users[i] = xcalloc(1, sizeof *users[i]);
        users[i]->L = L;
        users[i]->idx = i;
        const char *req;
        size_t len;
        load_user_request(users[i], &req, &len);
    }
    L->t_begin = now_ns();
    L->t0 = L->t_begin + (int64_t)(cfg->warmup_s * NS_PER_S);
    L->t_end = L->t0 + (int64_t)(cfg->duration_s * NS_PER_S);
    L->nsec = (int)((L->t_end - L->t_begin + NS_PER_S - 1) / NS_PER_S);
    for (int i = 0; i < rt_carriers(); i++)
        L->per_carrier[i].sec = xcalloc((size_t)L->nsec, sizeof *L->per_carrier[i].sec);
    for (int i = 0; i < cfg->users; i++)
        vt_spawn_spread(load_user_main, users[i]);
    free(users);
}

/* Wait (on an OS thread) until every user is done; the users stop at the window's end or
 * when stop is set. Returns the merged statistics (caller frees). */
static struct load_stats *load_wait(struct load *L)
{
    pthread_mutex_lock(&L->mu);
    while (L->done < L->cfg->users)
        pthread_cond_wait(&L->cv, &L->mu);
    pthread_mutex_unlock(&L->mu);
    struct load_stats *all = xcalloc(1, sizeof *all);
    all->nsec = L->nsec;
    all->sec = xcalloc((size_t)L->nsec, sizeof *all->sec);
    for (int i = 0; i < rt_carriers(); i++) {
        hist_merge(&all->h, &L->per_carrier[i].h);
        hist_merge(&all->hf, &L->per_carrier[i].hf);
        all->completed += L->per_carrier[i].completed;
        all->in_flight += L->per_carrier[i].in_flight;
        for (int e = 0; e < LOAD_NERR; e++)
            all->errors[e] += L->per_carrier[i].errors[e];
        for (int k = 0; k < 2 * L->nsec; k++)
            all->sec[k / 2][k % 2] += L->per_carrier[i].sec[k / 2][k % 2];
        free(L->per_carrier[i].sec);
    }
    free(L->per_carrier);
    pthread_cond_destroy(&L->cv);
    pthread_mutex_destroy(&L->mu);
    return all;
}

static void load_stats_free(struct load_stats *stats)
{
    free(stats->sec);
    free(stats);
}

static uint64_t load_errors_total(const struct load_stats *stats)
{
    uint64_t n = 0;
    for (int e = 0; e < LOAD_NERR; e++)
        n += stats->errors[e];
    return n;
}

/* A batch mean is nearly independent of the next when the batch is this many mean response
 * times long; with longer responses, one-second batches are correlated and their interval
 * too narrow (load_report says so). */
#define LOAD_BATCH_RESPONSES 10

/* The throughput's 95% interval from batch means: the 2xx answers of each whole second of the
 * window, `secs` long (shorter than asked after a Ctrl-C). Seconds are nearly independent
 * batches while a response takes well under one (the half-width is too narrow otherwise).
 * Returns how many seconds there were; *half is NAN under two. */
static int load_rps_interval(const struct load_cfg *cfg, const struct load_stats *stats,
                             double secs, double *half)
{
    int from = (int)ceil(cfg->warmup_s), to = (int)floor(cfg->warmup_s + secs);
    double *x = xcalloc((size_t)stats->nsec + 1, sizeof *x);
    int n = 0;
    for (int k = from; k < to && k < stats->nsec; k++)
        x[n++] = stats->sec[k][0];
    struct ci95 c = ci95_of(x, n);
    *half = n >= 2 ? c.hi - c.mean : NAN;
    free(x);
    return n;
}

static void load_report(const struct load_cfg *cfg, const struct load_stats *stats, double secs,
                        FILE *f)
{
    double rps = (double)stats->completed / secs, half;
    int nsec = load_rps_interval(cfg, stats, secs, &half);
    const struct hist *h = &stats->h;
    double ms[5] = {hist_quantile(h, 0.5) / 1e3, hist_quantile(h, 0.9) / 1e3,
                    hist_quantile(h, 0.99) / 1e3, hist_quantile(h, 0.999) / 1e3, h->max / 1e3};
    double mean = h->count ? (double)h->sum / (double)h->count / 1e3 : 0;
    if (cfg->json) {
        char ci[32] = "null";
        if (!isnan(half))
            snprintf(ci, sizeof ci, "%.2f", half);
        fprintf(f,
                "{\"throughput_rps\":%.2f,\"throughput_ci95\":%s,\"latency_ms\":{\"p50\":%.3f,"
                "\"p90\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f,\"mean\":%.3f},"
                "\"completed\":%llu,\"errors\":%llu,\"errors_by_kind\":{",
                rps, ci, ms[0], ms[1], ms[2], ms[3], ms[4], mean,
                (unsigned long long)stats->completed, (unsigned long long)load_errors_total(stats));
        for (int e = 0; e < LOAD_NERR; e++)
            fprintf(f, "%s\"%s\":%llu", e ? "," : "", load_err_names[e],
                    (unsigned long long)stats->errors[e]);
        const struct hist *hf = &stats->hf; /* -1: no request failed */
        fprintf(f, "},\"failed_p50_ms\":%.3f,\"failed_p99_ms\":%.3f",
                hf->count ? hist_quantile(hf, 0.5) / 1e3 : -1,
                hf->count ? hist_quantile(hf, 0.99) / 1e3 : -1);
        fprintf(f, ",\"in_flight\":%llu,\"users\":%d,\"duration_s\":%.3f",
                (unsigned long long)stats->in_flight, cfg->users, secs);
        if (cfg->per_second) /* [answers, errors] of second 1, 2, ... since the users started */
            fprintf(f, ",\"per_s\":[");
        for (int k = 0; cfg->per_second && k < stats->nsec; k++)
            fprintf(f, "%s[%u,%u]", k ? "," : "", stats->sec[k][0], stats->sec[k][1]);
        fprintf(f, "%s}\n", cfg->per_second ? "]" : "");
        return;
    }
    fprintf(f, "Running %.1fs test @ %s\n  %d users, %s\n", secs, cfg->url, cfg->users,
            cfg->rate > 0 ? "open loop" : "closed loop");
    if (cfg->rate > 0)
        fprintf(f, "  target rate %.0f req/s (latency from the intended send time)\n", cfg->rate);
    else
        fprintf(f, "  think time %d ms\n", cfg->think_ms);
    fprintf(
        f,
        "  Latency   mean %.2fms  p50 %.2fms  p90 %.2fms  p99 %.2fms  p99.9 %.2fms  max %.2fms\n",
        mean, ms[0], ms[1], ms[2], ms[3], ms[4]);
    fprintf(f, "  %llu requests in %.2fs, %llu in flight at the end\n  Errors:",
            (unsigned long long)stats->completed, secs, (unsigned long long)stats->in_flight);
    for (int e = 0; e < LOAD_NERR; e++)
        fprintf(f, " %s %llu", load_err_names[e], (unsigned long long)stats->errors[e]);
    fprintf(f, "\nRequests/sec: %.2f", rps);
    if (isnan(half))
        fprintf(f, " (no interval: %d whole second%s in the window, 2 needed)\n", nsec,
                nsec == 1 ? "" : "s");
    else
        fprintf(f, " \u00b1 %.2f (95%% interval from %d one-second batch means%s)\n", half, nsec,
                mean * LOAD_BATCH_RESPONSES >= 1000 ? "; too narrow: responses too long for them"
                                                    : "");
}

/* Split http://HOST:PORT/PATH into the config. Returns 0 or -1. */
static int load_parse_url(struct load_cfg *cfg, const char *url)
{
    if (strncmp(url, "http://", 7))
        return -1;
    const char *hp = url + 7, *slash = strchr(hp, '/');
    char buf[128];
    size_t n = slash ? (size_t)(slash - hp) : strlen(hp);
    if (n >= sizeof buf || strlen(slash ? slash : "/") >= sizeof cfg->path)
        return -1;
    /* the path goes into the request line as is: a space, CR or LF would end it early */
    for (const char *c = slash; c && *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f)
            return -1;
    memcpy(buf, hp, n);
    buf[n] = '\0';
    if (!strchr(buf, ':'))
        strcat(buf, ":80");
    if (parse_hostport(buf, &cfg->addr) < 0)
        return -1;
    snprintf(cfg->path, sizeof cfg->path, "%s", slash ? slash : "/");
    snprintf(cfg->url, sizeof cfg->url, "%s", url);
    return 0;
}

/* The most users a load generator on `carriers` carriers (rt_carriers_for) may hold
 * connections for, and its fd limit in *fds. Past it the users' own connects fail, and the
 * report would blame the server for them. Besides a connection per user, the runtime takes
 * two fds a carrier (epoll, eventfd), and the standard streams and the first connection a
 * few. */
enum { LOAD_FD_SPARE = 16 };
static long long load_max_users(int carriers, long long *fds)
{
    struct rlimit rl;
    raise_fd_limit();
    int known = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)INT_MAX;
    *fds = known ? (long long)rl.rlim_cur : INT_MAX;
    return *fds - LOAD_FD_SPARE - 2LL * rt_carriers_for(carriers);
}

static void load_defaults(struct load_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->users = 100;
    cfg->duration_s = 10;
    cfg->warmup_s = 1;
    cfg->timeout_ms = 30000;
}

/* Run a load test on a freshly started runtime and report it. Returns 0, or 1 on Ctrl-C. */
static int load_run_cli(struct load_cfg *cfg)
{
    struct load L;
    signals_block();
    rt_start(cfg->carriers);
    load_start(&L, cfg);
    int interrupted = signals_wait_until(L.t_end);
    int64_t end = now_ns() < L.t_end ? now_ns() : L.t_end;
    if (interrupted) {
        __atomic_store_n(&L.stop, 1, __ATOMIC_RELAXED);
        rt_shutdown(); /* cancels the requests in flight */
    }
    struct load_stats *stats = load_wait(&L);
    if (!interrupted)
        rt_shutdown();
    rt_join();
    double secs = (double)(end - L.t0) / NS_PER_S;
    load_report(cfg, stats, secs > 0 ? secs : 1e-9, stdout);
    unsigned long long errors = load_errors_total(stats), completed = stats->completed,
                       in_flight = stats->in_flight;
    load_stats_free(stats);
    if (!interrupted && !completed) { /* a server that accepts and never answers included */
        fprintf(stderr,
                "aggregator: load: no request succeeded (%llu errors, %llu in flight at the "
                "end)\n",
                errors, in_flight);
        return 1;
    }
    return interrupted;
}

/* ---- III.3 Bench ---- */

/* The grid: for each pooling setting, mode, user count and server, a fresh aggregator (and
 * the load generator) run as child processes of this one, next to one backend, all on
 * loopback (with --netns-ports, each cell in a namespace of its own with its own backend).
 * The aggregator is this binary's `serve`, or java/Aggregator.java on the JVM (--server
 * java), which is loaded for a while first so that its JIT has compiled the hot code before
 * the window. Children get their own process group and PR_SET_PDEATHSIG, so
 * nothing outlives the bench, even when it is killed; Ctrl-C stops the grid and the
 * children cleanly. */

/* The port wall (--netns-ports, and `aggregator netns`) needs a private network namespace: a
 * namespace's TCP state is its own (its sockets, its TIME_WAIT, and the sysctls
 * ip_local_port_range and tcp_tw_reuse), so a narrow range can be set without touching the
 * machine's. The calling process enters it; the children it starts afterwards (the backend,
 * the aggregator, the JVM, the load generator) inherit it. Each cell gets a new one, because
 * a namespace's ports stay in TIME_WAIT for 60 s after a wall. */
#define NETNS_PORT_LOW 40000 /* the first ephemeral port: above any --port of the bench */

static int netns_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Without root: a user namespace where we are root (uid and gid mapped to ours), which owns
 * the network namespaces made afterwards. The kernel allows it to a single-threaded process
 * where unprivileged user namespaces are enabled. */
static int netns_become_root(void)
{
    char map[64];
    unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
    if (unshare(CLONE_NEWUSER) < 0)
        return -1;
    snprintf(map, sizeof map, "0 %u 1\n", uid);
    if (netns_write("/proc/self/uid_map", map) < 0)
        return -1;
    netns_write("/proc/self/setgroups", "deny\n"); /* needed before gid_map where it exists */
    snprintf(map, sizeof map, "0 %u 1\n", gid);
    return netns_write("/proc/self/gid_map", map);
}

/* Bring lo up (SIOCSIFFLAGS): a new namespace's loopback is down. */
static int netns_lo_up(void)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;
    if (fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP;
        rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
    }
    int e = errno;
    if (fd >= 0)
        close(fd);
    errno = e;
    return rc;
}

/* Set the namespace's ephemeral port range to [low, high]. Returns 0, or -1 with errno. */
static int netns_set_range(int low, int high)
{
    char range[32];
    snprintf(range, sizeof range, "%d %d\n", low, high);
    return netns_write("/proc/sys/net/ipv4/ip_local_port_range", range);
}

/* Enter a new network namespace with lo up, nports ephemeral ports (NETNS_PORT_LOW and up)
 * and tcp_tw_reuse 0 (no reuse of a TIME_WAIT port by connect()). Returns 0, or -1 with
 * the reason in why. */
static int netns_enter(int nports, char *why, size_t n)
{
    static int in_userns; /* netns_become_root has been done: no second try */
    if (unshare(CLONE_NEWNET) < 0) {
        int e = errno;
        if (e != EPERM || in_userns || netns_become_root() < 0 || unshare(CLONE_NEWNET) < 0) {
            snprintf(why, n, "unshare(CLONE_NEWNET): %s%s", strerror(e),
                     e == EPERM ? " (not root, and no unprivileged user namespaces)" : "");
            return -1;
        }
        in_userns = 1;
    }
    const char *step = "bring lo up";
    if (netns_lo_up() < 0 ||
        (step = "/proc/sys/net/ipv4/ip_local_port_range",
         netns_set_range(NETNS_PORT_LOW, NETNS_PORT_LOW + nports - 1) < 0) ||
        (step = "/proc/sys/net/ipv4/tcp_tw_reuse",
         netns_write("/proc/sys/net/ipv4/tcp_tw_reuse", "0\n") < 0)) {
        snprintf(why, n, "%s: %s", step, strerror(errno));
        return -1;
    }
    return 0;
}

/* The servers the bench measures: this file's, or java/Aggregator.java on the JVM (embedded
 * Tomcat), started as it is documented there and given the same flags. */
enum { SERVER_C, SERVER_JAVA, SERVER_N };
static const char *const server_names[SERVER_N] = {"c", "java"};
static const char *const mode_names[2] = {"platform", "virtual"}; /* by MODE_PLATFORM, _VIRTUAL */

/* How to start the JVM server, as java/find-jdk says: its `java`, the flags its preview API
 * needs (StructuredTaskScope on JDK 25: --enable-preview, and --source 25 for the source
 * launcher; none before), Tomcat's classpath (with build/java in front when compiled), and
 * the main class, or the source file for the single-file launcher when build/java is missing
 * or older than the source. */
struct jvm {
    char java[PATH_MAX], classpath[2 * PATH_MAX + 64], main[PATH_MAX + 64];
    char preview[64];    /* the flags as find-jdk prints them, "" for none */
    char words[64];      /* the same, split in place: flag[i] points into it */
    const char *flag[4]; /* the flags' words, which go before -cp */
    int nflags;
};

/* How far the grid is, for the progress line before each cell. */
struct bench_progress {
    int cells, done;       /* cells of the grid (points x runs), cells measured */
    double planned_s;      /* planned seconds of all cells (bench_plan_s) */
    double planned_done_s; /* of the cells measured */
    int64_t t0;            /* when the first cell started, ns */
};

struct bench_cfg {
    const char *users;       /* comma-separated user counts */
    const char *servers;     /* comma-separated: c, java */
    const char *modes;       /* comma-separated: platform, virtual */
    const char *pool;        /* on, off or both */
    const char *close_first; /* pool off: client, server or both */
    int on_failure;          /* -1: the K calls one after another (no --on-failure); else
                              * ON_FAILURE_*: in parallel (?parallel=1), under that policy */
    double fail_share;       /* the backend's --fail-share: calls answered 500 ... */
    int fail_after_ms;       /* ... after this many ms (--fail-after-ms) */
    const char *auths;       /* --auth: off, hs256, rs256 (bench's own keys) or a key file each */
    struct bench_auth *auth; /* the one the cells now run with (NULL: none) */
    int fanout;              /* K */
    int delay_ms;            /* D */
    int think_ms;            /* Z */
    double duration_s;       /* measured seconds per cell */
    int runs;                /* runs per cell; the median (by throughput) is kept */
    int threads;             /* platform pool size */
    int carriers;            /* virtual carriers (0: one per CPU) */
    int port;                /* backend port; the aggregator uses port + 1 */
    const char *out;         /* CSV path */
    pid_t backend;           /* the backend's pid, for its CPU time */
    pid_t fail_backend;      /* --fail-share: item 0's backend, on port + 2, the failing one */
    double jit_warmup_s;     /* java: load before each measured window, not counted */
    const struct jvm *jvm;   /* java: how to start it (NULL when no java cell is asked for) */
    int netns_ports;         /* > 0: each cell in a new network namespace with this many ports */
    FILE *timeline;          /* --timeline: one row per second of each run, or NULL */
    const char *timeline_path;
    struct bench_progress progress; /* for the estimate of the time left (stderr) */
};

/* The load generator's warm-up before its window, s (the CSV says it, for ./sim --validate). */
#define BENCH_WARMUP_S 1

/* The JVM's load before each measured window, s (--jit-warmup): C2 compiles the hot paths and
 * G1 grows the heap to the load, and until both settle a request costs more CPU (README
 * has the CPU per request after 5 s and after 15 s). */
#define BENCH_JIT_WARMUP_S 15

/* One second of a run for --timeline, since its load started. */
struct bench_tick {
    uint32_t served, failed; /* the load generator's answers and errors in that second */
    double no_port;          /* the server's no_port counter at the second's end (-1: none) */
    long time_wait;          /* TIME_WAIT sockets of the aggregator's downstream connections
                              * at the second's end: to or from the backend's port, the other
                              * port in the window's ephemeral range (tw_low..tw_high), so at
                              * most the range's size (the load generator's own are not) */
};

/* One cell's figures. */
struct bench_row {
    int users, pool, mode, server;
    double rps, p50, p90, p99, cpu_us_per_req;
    double other_cpu_us_per_req; /* the rest of the machine's (backend, load generator, kernel) */
    double steal_pct;            /* % of the cores' time the hypervisor took during the window */
    double foreign_pct;          /* % of it that processes not of the bench had */
    long peak_threads, peak_rss, errors;
    long base_rss;     /* the aggregator's RSS before the load, bytes */
    long base_threads; /* its OS threads once it listens, before any load */
    /* From the server's /metrics, the window's difference (-1: the server does not say). */
    double failed;                 /* downstream calls failed, every reason */
    double failed_no_port;         /* requests a call's EADDRNOTAVAIL failed (<= failed) */
    double alloc_per_req;          /* bytes the server allocated per request served */
    double calls_per_req;          /* downstream calls started per request answered or failed */
    double call_ms_per_req;        /* ms downstream connections were held per request (ds_held) */
    double failed_p50, failed_p99; /* the load generator's, of its failed requests (-1: none) */
    double server_p50, server_p99; /* the server's own, its /metrics histogram over the window
                                      (bench_hist_quantile; -1: unknown) */
    struct net_ports net;          /* the namespace the cell ran in */
    int close_first;               /* pool off: CLOSE_CLIENT or CLOSE_SERVER */
    struct bench_tick *ticks;      /* --timeline: the run's seconds (heap; the row's owner frees) */
    int nticks;
    int tw_low, tw_high; /* the window's ephemeral ports: the timeline's TIME_WAIT range */
    /* Over the point's --runs (bench_point): rps becomes their mean. */
    int runs;       /* runs measured */
    struct ci95 ci; /* of their rps: the mean's 95% interval (= rps for one run), extremes */
};

/* The children alive (0 = a free slot), so that every exit path can stop them. */
struct bench_kids {
    pid_t pid[6];
};

static void bench_forget(struct bench_kids *kids, pid_t pid)
{
    for (size_t i = 0; i < ARRAY_LEN(kids->pid); i++)
        if (kids->pid[i] == pid)
            kids->pid[i] = 0;
}

/* SIGTERM to the child's process group, up to 5 s to stop cleanly, then SIGKILL. */
static void bench_kill(struct bench_kids *kids, pid_t pid)
{
    if (pid <= 0)
        return;
    kill(-pid, SIGTERM);
    int i = 0;
    while (waitpid(pid, NULL, WNOHANG) != pid) {
        if (++i == 500) {
            kill(-pid, SIGKILL);
            waitpid(pid, NULL, 0);
            break;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    bench_forget(kids, pid);
}

static void bench_kill_all(struct bench_kids *kids)
{
    for (size_t i = 0; i < ARRAY_LEN(kids->pid); i++)
        bench_kill(kids, kids->pid[i]);
}

/* fork + exec of exe (NULL: /proc/self/exe) with argv; stdout to out_fd if >= 0, stderr to
 * /dev/null unless keep_stderr. The child gets SIGINT and SIGTERM unblocked: the bench blocks
 * them (signals_block) and a mask survives exec, but the JVM stops on SIGTERM by its handler
 * (our own children block them again themselves). */
enum { BENCH_STDERR_NULL = 0, BENCH_STDERR_KEEP = 1 }; /* bench_spawn: the child's stderr */

static pid_t bench_spawn(struct bench_kids *kids, const char *exe, char *const argv[], int out_fd,
                         int keep_stderr)
{
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1); /* the bench died before prctl */
        if (out_fd >= 0)
            dup2(out_fd, 1);
        if (!keep_stderr) {
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0)
                dup2(null, 2);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(exe ? exe : "/proc/self/exe", argv);
        _exit(127);
    }
    setpgid(pid, pid);
    for (size_t i = 0; i < ARRAY_LEN(kids->pid); i++)
        if (!kids->pid[i]) {
            kids->pid[i] = pid;
            break;
        }
    return pid;
}

/* A connection to 127.0.0.1:port whose reads and writes time out after timeout_s, or -1. */
static int bench_dial(int port, int timeout_ms)
{
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {timeout_ms / 1000, timeout_ms % 1000 * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (fd >= 0 && connect(fd, (const struct sockaddr *)&sa, sizeof sa) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Send GET /metrics on fd; whether it went whole. */
static int bench_ask_metrics(int fd)
{
    static const char req[] =
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    return write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1);
}

/* One attempt: a connection accepted and, with `answer`, GET /metrics answered 200. */
enum { BENCH_WAIT_ACCEPT = 0, BENCH_WAIT_ANSWER = 1 }; /* bench_wait_port: what is ready */

static int bench_try(int port, int answer)
{
    char got[12];
    int fd = bench_dial(port, 1000);
    int ok =
        fd >= 0 && (!answer || (bench_ask_metrics(fd) &&
                                recv(fd, got, sizeof got, MSG_WAITALL) == (ssize_t)sizeof got &&
                                !memcmp(got, "HTTP/1.1 200", sizeof got)));
    if (fd >= 0)
        close(fd);
    return ok;
}

/* Wait (up to timeout_s) until 127.0.0.1:port accepts connections or, with `answer`, answers
 * GET /metrics: Tomcat binds its port before it starts its threads, so a port that accepts is
 * not yet a server to count. -1 at once if the child pid that should listen there exits
 * first (it is then reaped and forgotten). */
static int bench_wait_port(struct bench_kids *kids, pid_t pid, int port, int timeout_s, int answer)
{
    for (int64_t end = now_ns() + timeout_s * NS_PER_S; now_ns() < end;) {
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            bench_forget(kids, pid);
            return -1;
        }
        if (bench_try(port, answer))
            return 0;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return -1;
}

static double nonneg(double x)
{
    return x > 0 ? x : 0;
}

/* utime + stime of a process, in µs, from /proc/PID/stat (fields 14 and 15). */
static double bench_cpu_us(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long utime = 0, stime = 0;
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2)
        return 0;
    return (double)(utime + stime) * 1e6 / (double)sysconf(_SC_CLK_TCK);
}

/* CPU time the whole machine spent working, and the time the hypervisor stole from it
 * (a VM's vCPU waiting for the host), in µs, from /proc/stat's first line. Work is user,
 * nice, system, irq and softirq: the figure the model's CPU ceiling is about, since the
 * aggregator, the backend and the load generator share the cores, and the loopback TCP
 * stack's softirq work is charged to whichever of them happens to be running. Steal is
 * not work; it is capacity the machine did not have, and it makes runs noisy. */
struct machine_cpu {
    double work_us, steal_us;
    double task_us; /* user, nice and system alone: what processes are charged */
};

static struct machine_cpu bench_machine_cpu(void)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                       &v[4], &v[5], &v[6], &v[7])
              : 0;
    if (f)
        fclose(f);
    double tick = 1e6 / (double)sysconf(_SC_CLK_TCK);
    if (n != 8)
        return (struct machine_cpu){-1, -1, -1};
    return (struct machine_cpu){(double)(v[0] + v[1] + v[2] + v[5] + v[6]) * tick,
                                (double)v[7] * tick, (double)(v[0] + v[1] + v[2]) * tick};
}

/* The CPU counters a window is measured between: the aggregator's, the rest of the bench's
 * own processes' (the backend and the load generator), every other process's alive at the
 * sample (bench_others_cpu_us), and the machine's. */
struct bench_cpu {
    double agg_us, ours_us, others_us;
    struct machine_cpu all;
};

/* utime + stime summed over the processes in /proc but the n of ours, µs. */
static double bench_others_cpu_us(const pid_t *ours, int n)
{
    DIR *d = opendir("/proc");
    double sum = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        int mine = *end || pid <= 0;
        for (int i = 0; i < n && !mine; i++)
            mine = ours[i] == (pid_t)pid;
        if (!mine)
            sum += bench_cpu_us((pid_t)pid);
    }
    if (d)
        closedir(d);
    return sum;
}

/* The share of the cores' time, in %, that processes other than the bench's own had between
 * two samples `us` apart: another user's build or test on a shared machine. Like steal, it is
 * capacity the model does not know the aggregator lacked. Two lower bounds of it, and the
 * larger is taken, since which one is near depends on the kernel:
 *   - the machine's task time (user, nice, system) less our processes' clocks. With
 *     CONFIG_IRQ_TIME_ACCOUNTING the clocks leave the softirq out, as the task time does, and
 *     this is the other processes' CPU, those that ended inside the window included. Without
 *     it (tick accounting, as on many VMs' kernels) a tick that lands in a softirq counts as
 *     the running task's system time but as the machine's softirq, not its task time: our
 *     processes' clocks hold the loopback's softirq and the difference loses that much, the
 *     whole neighbour on a busy loopback;
 *   - the other processes' clocks, summed over those alive at the window's two ends: right
 *     under either accounting, but blind to a process that ended inside the window (a
 *     build's compiler), whose CPU before the window it even subtracts. */
static double bench_foreign_pct(const struct bench_cpu *a, const struct bench_cpu *b, double us)
{
    double ours = (b->agg_us - a->agg_us) + (b->ours_us - a->ours_us),
           by_task_time = b->all.task_us - a->all.task_us - ours,
           by_clocks = b->others_us - a->others_us;
    return 100 * nonneg(fmax(by_task_time, by_clocks)) /
           (us * (double)sysconf(_SC_NPROCESSORS_ONLN));
}

/* The share of the cores' time, in %, the hypervisor stole between two samples `us` apart. */
static double bench_steal_pct(struct machine_cpu a, struct machine_cpu b, double us)
{
    return 100 * (b.steal_us - a.steal_us) / (us * (double)sysconf(_SC_NPROCESSORS_ONLN));
}

static double bench_json_num(const char *json, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k);
    return p ? strtod(p + strlen(k), NULL) : -1;
}

/* Whether the comma-separated list names the server (c, java). */
static int bench_has_server(const char *list, int server)
{
    const char *name = server_names[server];
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
            return 1;
    return 0;
}

/* Whether every name in the list is a server, each once. */
static int bench_servers_valid(const char *list)
{
    int names = 1, known = 0;
    for (const char *p = list; *p; p++)
        names += *p == ',';
    for (int si = 0; si < SERVER_N; si++)
        known += bench_has_server(list, si);
    return *list && known == names;
}

/* The repository's top: the first of the binary's directory and its two parents that holds
 * java/find-jdk (the binary is ./aggregator, or build/asan/aggregator), else ".". */
static void jvm_root(char *root, size_t len)
{
    char exe[PATH_MAX], probe[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash)
            break;
        *slash = '\0';
        snprintf(probe, sizeof probe, "%s/java/find-jdk", exe);
        if (access(probe, R_OK) == 0) {
            snprintf(root, len, "%s", exe);
            return;
        }
    }
    snprintf(root, len, ".");
}

/* The one line `sh ROOT/java/find-jdk ARG` prints; -1 if it fails (it said why on stderr),
 * or if it prints nothing where an answer is needed (`empty_ok` 0). */
static int jvm_ask_line(const char *root, const char *arg, char *out, size_t len, int empty_ok)
{
    char cmd[PATH_MAX + 64];
    if (strchr(root, '\''))
        return -1;
    snprintf(cmd, sizeof cmd, "sh '%s/java/find-jdk' %s", root, arg);
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int got = fgets(out, (int)len, p) != NULL;
    int status = pclose(p);
    out[got ? strcspn(out, "\n") : 0] = '\0';
    return status == 0 && (empty_ok || (got && *out)) ? 0 : -1;
}

static int jvm_ask(const char *root, const char *arg, char *out, size_t len)
{
    return jvm_ask_line(root, arg, out, len, 0);
}

/* Fill *j from java/find-jdk; -1 without a JDK 21+ or Tomcat's jars (find-jdk said which). */
static int jvm_find(struct jvm *j)
{
    char root[PATH_MAX], cp[PATH_MAX], cls[PATH_MAX + 64], src[PATH_MAX + 64];
    jvm_root(root, sizeof root);
    if (jvm_ask(root, "", j->java, sizeof j->java) < 0 ||
        jvm_ask(root, "--classpath", cp, sizeof cp) < 0)
        return -1;
    snprintf(src, sizeof src, "%s/java/Aggregator.java", root);
    snprintf(cls, sizeof cls, "%s/build/java/Aggregator.class", root);
    struct stat c, s;
    int compiled =
        stat(cls, &c) == 0 && stat(src, &s) == 0 &&
        (c.st_mtim.tv_sec > s.st_mtim.tv_sec ||
         (c.st_mtim.tv_sec == s.st_mtim.tv_sec && c.st_mtim.tv_nsec >= s.st_mtim.tv_nsec));
    snprintf(j->classpath, sizeof j->classpath, "%s%s%s", compiled ? root : "",
             compiled ? "/build/java:" : "", cp);
    snprintf(j->main, sizeof j->main, "%s", compiled ? "Aggregator" : src);
    if (jvm_ask_line(root, compiled ? "--preview" : "--preview-source", j->preview,
                     sizeof j->preview, 1) < 0)
        return -1;
    char *save = NULL;
    snprintf(j->words, sizeof j->words, "%s", j->preview);
    j->nflags = 0;
    for (char *w = strtok_r(j->words, " ", &save); w && j->nflags < (int)ARRAY_LEN(j->flag);
         w = strtok_r(NULL, " ", &save))
        j->flag[j->nflags++] = w;
    return 0;
}

/* bc->jvm, found into *j, when bc->servers names java. Returns 0, or 2 (the exit status)
 * without a JDK: find-jdk has printed its one line. */
static int bench_setup_jvm(struct bench_cfg *bc, struct jvm *j)
{
    bc->jvm = NULL;
    if (!bench_has_server(bc->servers, SERVER_JAVA))
        return 0;
    if (jvm_find(j) < 0)
        return 2;
    bc->jvm = j;
    return 0;
}

/* The aggregator of one cell, C or Java, with the cell's flags; its pid once it listens. The
 * JVM gets longer to start: the source launcher compiles the file first. */
enum { BENCH_START_C_S = 5, BENCH_START_JAVA_S = 60 };

/* What a JVM's start (its source launcher's compile, Tomcat's) is guessed to take, s: only
 * for the first estimate of the time left; measured cells correct it. */
#define BENCH_JAVA_START_GUESS_S 5

/* bench --auth: each cell's server wants bearer tokens, each user of its load sends its own
 * (serve --auth, load --auth, II.9), so that a secured service's CPU per request is measured
 * beside the same grid without: off, hs256 (an HMAC secret), rs256 (an RSA key pair, the
 * resource-server default of Spring Security), bench making the keys in a directory of its
 * own, or hs256:KEYFILE and rs256:PRIVKEY.pem, bench writing the public key the server
 * checks with. The tokens name BENCH_ISSUER and BENCH_AUDIENCE, which the server wants. */
#define BENCH_ISSUER   "https://idp.loom-lab"
#define BENCH_AUDIENCE "aggregate"
struct bench_auth {
    char name[8];             /* off, hs256, rs256: the table's line before its rows */
    char serve[PATH_MAX + 8]; /* serve's --auth (empty: off) */
    char load[PATH_MAX + 8];  /* load's --auth */
};

/* Write the key of a (its public half for rs256) into dir/NAME; the path, into path. */
static int bench_auth_write(const struct auth *a, const char *dir, int public, char *path,
                            size_t len)
{
    snprintf(path, len, "%s/%s%s", dir, auth_kinds[a->alg], public ? ".pub" : ".key");
    FILE *f = fopen(path, "wb");
    int ok = f && (a->alg == AUTH_HS256 ? fwrite(a->secret, 1, a->secret_len, f) == a->secret_len
                   : public             ? PEM_write_PUBKEY(f, a->key) == 1
                            : PEM_write_PrivateKey(f, a->key, NULL, NULL, 0, NULL, NULL) == 1);
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

/* One --auth word into b, its keys made or read, and written into dir. Returns 0, or -1 with
 * why. */
static int bench_auth_one(struct bench_auth *b, const char *word, size_t n, const char *dir,
                          char *why, size_t len)
{
    struct auth a = {0};
    char spec[PATH_MAX + 8];
    memset(b, 0, sizeof *b);
    snprintf(spec, sizeof spec, "%.*s", (int)n, word);
    snprintf(b->name, sizeof b->name, "%.5s", spec);
    int alg;
    if (!strcmp(spec, "off"))
        return 0;
    if (names_find(auth_kinds, ARRAY_LEN(auth_kinds), spec, &alg) == 0) {
        if (auth_make(&a, alg) < 0)
            return snprintf(why, len, "cannot make an %s key", auth_algs[alg]), -1;
    } else if (auth_load(&a, spec, 1, why, len) < 0) {
        return -1;
    }
    char key[PATH_MAX], pub[PATH_MAX];
    int rc = bench_auth_write(&a, dir, 0, key, sizeof key) == 0 &&
                     (a.alg == AUTH_HS256 || bench_auth_write(&a, dir, 1, pub, sizeof pub) == 0)
                 ? 0
                 : -1;
    snprintf(b->load, sizeof b->load, "%s:%s", auth_kinds[a.alg], key);
    snprintf(b->serve, sizeof b->serve, "%s:%s", auth_kinds[a.alg],
             a.alg == AUTH_HS256 ? key : pub);
    if (rc < 0)
        snprintf(why, len, "cannot write the keys into %s: %s", dir, strerror(errno));
    auth_free(&a);
    return rc;
}

/* Remove the key files bench_auth_one wrote for auths[0..n) (serve's and load's; an "off"
 * names none), then their directory. */
static void bench_auth_remove(const struct bench_auth *auths, int n, const char *dir)
{
    for (int a = 0; a < n; a++)
        for (const char *f = auths[a].serve; f; f = f == auths[a].serve ? auths[a].load : NULL)
            if (strchr(f, ':'))
                unlink(strchr(f, ':') + 1);
    rmdir(dir);
}

/* The --auth list into auths[] (at most 4); their count, or -1 with why. */
static int bench_auth_list(const char *list, const char *dir, struct bench_auth *auths, char *why,
                           size_t len)
{
    int n = 0;
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        size_t w = strcspn(p, ",");
        if (n == 4)
            return snprintf(why, len, "--auth: at most 4 words"), -1;
        if (bench_auth_one(&auths[n++], p, w, dir, why, len) < 0)
            return -1;
    }
    return n;
}

/* A backend on port that answers after delay_ms, failing a share of its calls (0: none). */
static pid_t bench_backend_at(struct bench_kids *kids, int port, int delay_ms, double fail_share,
                              int fail_after_ms)
{
    char bport[16], delay[16], share[32], after[16];
    snprintf(bport, sizeof bport, "%d", port);
    snprintf(delay, sizeof delay, "%d", delay_ms);
    snprintf(share, sizeof share, "%.17g", fail_share);
    snprintf(after, sizeof after, "%d", fail_after_ms);
    char *bargv[] = {"aggregator",   "backend", "--port",          bport, "--delay-ms", delay,
                     "--fail-share", share,     "--fail-after-ms", after, NULL};
    pid_t pid = bench_spawn(kids, NULL, bargv, -1, BENCH_STDERR_NULL);
    if (bench_wait_port(kids, pid, port, BENCH_START_C_S, BENCH_WAIT_ACCEPT) < 0)
        die("the backend did not start on port %d", port);
    return pid;
}

/* The backend that answers after delay_ms, on bc->port, and with --fail-share the one that
 * fails that share of its calls, on bc->port + 2: the first of the K calls goes to it, the
 * others to the healthy one (bench_start_server), so that one of the K siblings fails, and
 * what the fan-out does to the others is what is measured. The previous ones are stopped
 * first. */
static void bench_backend(struct bench_cfg *bc, struct bench_kids *kids, int delay_ms)
{
    if (bc->backend > 0)
        bench_kill(kids, bc->backend);
    if (bc->fail_backend > 0)
        bench_kill(kids, bc->fail_backend);
    bc->backend = bench_backend_at(kids, bc->port, delay_ms, 0, 0);
    bc->fail_backend = bc->fail_share > 0 ? bench_backend_at(kids, bc->port + 2, delay_ms,
                                                             bc->fail_share, bc->fail_after_ms)
                                          : 0;
    bc->delay_ms = delay_ms;
}

static pid_t bench_start_server(const struct bench_cfg *bc, struct bench_kids *kids,
                                const struct bench_row *row)
{
    char port[16], fan[16], thr[16], car[16];
    snprintf(port, sizeof port, "%d", bc->port + 1);
    struct sbuf bport = {0}; /* --fail-share: the failing backend first, then K - 1 healthy */
    for (int i = 0; i < (bc->fail_backend > 0 ? bc->fanout : 1); i++)
        sbuf_printf(&bport, "%s127.0.0.1:%d", i ? "," : "",
                    bc->port + (i == 0 && bc->fail_backend > 0 ? 2 : 0));
    snprintf(fan, sizeof fan, "%d", bc->fanout);
    snprintf(thr, sizeof thr, "%d", bc->threads);
    snprintf(car, sizeof car, "%d", bc->carriers);
    int java = row->server == SERVER_JAVA;
    const char *argv[48],
        *head_c[] = {"aggregator", "serve"},
        *head_java[] = {"-cp", bc->jvm ? bc->jvm->classpath : "", bc->jvm ? bc->jvm->main : ""},
        *flags[] = {"--mode",         mode_names[row->mode],
                    "--port",         port,
                    "--backends",     bport.p,
                    "--fanout",       fan,
                    "--threads",      thr,
                    "--carriers",     car,
                    "--accept-count", "4096",
                    "--timeout-ms",   "30000"};
    size_t n = 0;
    for (size_t i = 0; !java && i < ARRAY_LEN(head_c); i++)
        argv[n++] = head_c[i];
    if (java) /* java, its preview flags, then -cp CLASSPATH MAIN */
        argv[n++] = bc->jvm ? bc->jvm->java : "";
    for (int i = 0; java && bc->jvm && i < bc->jvm->nflags; i++)
        argv[n++] = bc->jvm->flag[i];
    for (size_t i = 0; java && i < ARRAY_LEN(head_java); i++)
        argv[n++] = head_java[i];
    for (size_t i = 0; i < ARRAY_LEN(flags); i++)
        argv[n++] = flags[i];
    if (!java) { /* the load generator's users are one address: measured, not limited */
        argv[n++] = "--max-per-client";
        argv[n++] = "0";
    }
    if (!row->pool) {
        argv[n++] = "--no-pool";
        argv[n++] = "--close-first";
        argv[n++] = close_first_names[row->close_first];
    }
    if (bc->on_failure >= 0) {
        argv[n++] = "--on-failure";
        argv[n++] = on_failure_names[bc->on_failure];
    }
    if (bc->auth && *bc->auth->serve) {
        const char *a[] = {"--auth",     bc->auth->serve,   "--auth-issuer",
                           BENCH_ISSUER, "--auth-audience", BENCH_AUDIENCE};
        for (size_t i = 0; i < ARRAY_LEN(a); i++)
            argv[n++] = a[i];
    }
    argv[n] = NULL;
    pid_t pid =
        bench_spawn(kids, java ? argv[0] : NULL, (char *const *)argv, -1, BENCH_STDERR_NULL);
    sbuf_free(&bport);
    if (bench_wait_port(kids, pid, bc->port + 1, java ? BENCH_START_JAVA_S : BENCH_START_C_S,
                        BENCH_WAIT_ANSWER) < 0) {
        bench_kill_all(kids);
        die("the %s aggregator did not start on port %s%s", server_names[row->server], port,
            java ? " (try it by hand: java/Aggregator.java says how)" : "");
    }
    return pid;
}

/* The load generator on url (NULL: the cell's aggregator): `users` for duration_s after
 * warmup_s. Its stderr is kept; its stdout (the JSON report) goes to a pipe whose read end is
 * *report, or to /dev/null without report. */
static pid_t bench_load(const struct bench_cfg *bc, struct bench_kids *kids, char *url, int nusers,
                        double duration_s, double warmup_s, int *report)
{
    char agg[64], users[16], dur[32], think[16], warm[32];
    snprintf(agg, sizeof agg, "http://127.0.0.1:%d/aggregate%s", bc->port + 1,
             bc->on_failure >= 0 ? "?parallel=1" : "");
    snprintf(users, sizeof users, "%d", nusers);
    snprintf(dur, sizeof dur, "%g", duration_s);
    snprintf(think, sizeof think, "%d", bc->think_ms);
    snprintf(warm, sizeof warm, "%g", warmup_s);
    char *largv[24] = {"aggregator", "load",       "--url", url ? url : agg, "--users",
                       users,        "--duration", dur,     "--think-ms",    think,
                       "--warmup",   warm,         "--json"};
    int n = 13;
    if (bc->timeline && warmup_s > 0)
        largv[n++] = "--per-second";
    if (bc->auth && *bc->auth->load) {
        char *a[] = {"--auth",     bc->auth->load,    "--auth-issuer",
                     BENCH_ISSUER, "--auth-audience", BENCH_AUDIENCE};
        for (size_t i = 0; i < ARRAY_LEN(a); i++)
            largv[n++] = a[i];
    }
    largv[n] = NULL;
    int fd[2] = {-1, -1};
    if (report && pipe2(fd, O_CLOEXEC) < 0)
        die("pipe: %s", strerror(errno));
    if (!report)
        fd[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
    pid_t pid = bench_spawn(kids, NULL, largv, fd[1], BENCH_STDERR_KEEP);
    if (fd[1] >= 0)
        close(fd[1]);
    if (report)
        *report = fd[0];
    return pid;
}

/* In a port-wall namespace the JIT's warm-up spends ports of a range of its own, the ports
 * above the wall's (warming = 1), and the window then gets the wall's range untouched
 * (warming = 0): a warm server meets the wall as a cold one would, where a warm-up in the
 * wall's range would have met it first, or a window without one would measure the
 * interpreter. The warm-up's TIME_WAIT sockets stay (60 s) in their range, so the timeline
 * then counts those of the wall's range only (row->tw_low..tw_high). Returns 0, or -1 when
 * the namespace has no port to spare above the wall's range. */
static int bench_warm_ports(const struct bench_cfg *bc, struct bench_row *row, int warming)
{
    int wall_high = NETNS_PORT_LOW + bc->netns_ports - 1;
    if (wall_high >= 65535) {
        fprintf(stderr, "bench: no port above the wall's range for the JIT's warm-up: none\n");
        return -1;
    }
    int rc = warming ? netns_set_range(wall_high + 1, 65535)
                     : netns_set_range(NETNS_PORT_LOW, wall_high);
    if (rc < 0)
        die("/proc/sys/net/ipv4/ip_local_port_range: %s", strerror(errno));
    row->tw_low = NETNS_PORT_LOW;
    row->tw_high = wall_high;
    return 0;
}

/* The JIT's warm-up, for the JVM only: the cell's load for bc->jit_warmup_s, not measured, so
 * that the window measures compiled code, a grown heap and a grown pool, not the
 * interpreter (the first seconds of a JVM cost several times the CPU of the steady state).
 * Returns 0, or -1 if interrupted. */
static int bench_jit_warmup(const struct bench_cfg *bc, struct bench_kids *kids,
                            struct bench_row *row)
{
    if (row->server != SERVER_JAVA || !(bc->jit_warmup_s > 0))
        return 0;
    if (bc->netns_ports > 0 && bench_warm_ports(bc, row, 1) < 0)
        return 0; /* no ports to spare: the window starts cold (said on stderr) */
    pid_t load = bench_load(bc, kids, NULL, row->users, bc->jit_warmup_s, 0, NULL);
    while (waitpid(load, NULL, WNOHANG) == 0)
        if (signals_wait_until(now_ns() + 50 * NS_PER_MS)) {
            bench_kill(kids, load);
            return -1;
        }
    bench_forget(kids, load);
    if (bc->netns_ports > 0)
        bench_warm_ports(bc, row, 0);
    return 0;
}

/* How long bench waits for a /metrics page, ms: at the window's two ends, and each second of
 * a timeline (where a late page would delay the next second's samples). */
#define BENCH_SCRAPE_MS      2000
#define BENCH_TICK_SCRAPE_MS 800

/* The counters bench reads from a server's /metrics (the contract both servers keep), -1
 * when the page does not have them (or did not come). */
struct bench_scrape {
    double failed;              /* agg_downstream_failures_total, summed over the reasons */
    double no_port;             /* agg_requests_failed_no_port_total: requests, not calls */
    double alloc_bytes;         /* agg_alloc_bytes_total */
    double calls;               /* agg_downstream_calls_total: calls started */
    double held_us;             /* agg_downstream_held_us_total: µs they held a connection */
    double le[METRICS_NLE + 1]; /* agg_request_seconds_bucket, by metrics_le_ms and +Inf */
};

/* The value of the line starting with `name` in a metrics page, or -1. */
static double bench_metric(const char *page, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = page; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ' ' || p[n] == '{')) {
            const char *v = p[n] == ' ' ? p + n : strstr(p, "} ");
            return v ? strtod(v + (*v == '}' ? 2 : 1), NULL) : -1;
        }
    return -1;
}

/* b - a for a counter both scrapes have, else -1. */
static double bench_delta(double a, double b)
{
    return a >= 0 && b >= a ? b - a : -1; /* a counter that went back (a restart): unknown */
}

/* The server's latency histogram in a metrics page into le (cumulative counts by
 * metrics_le_ms, then +Inf; -1 where the page has no such bucket). */
static void bench_scrape_hist(const char *page, double *le)
{
    static const char fam[] = "agg_request_seconds_bucket{le=\"";
    for (int i = 0; i <= METRICS_NLE; i++)
        le[i] = -1;
    for (const char *p = strstr(page, fam); p; p = strstr(p + 1, fam)) {
        const char *at = p + strlen(fam), *v = strstr(at, "} ");
        double ms = strncmp(at, "+Inf", 4) ? strtod(at, NULL) * 1000 : INFINITY;
        for (int i = 0; v && i <= METRICS_NLE; i++)
            if (i == METRICS_NLE ? isinf(ms) : fabs(ms - metrics_le_ms[i]) < 1e-6)
                le[i] = strtod(v + 2, NULL);
    }
}

/* The q-quantile of the requests a histogram counted between two scrapes, ms: linear
 * within the bucket that holds it, as Prometheus' histogram_quantile estimates it (so it is
 * known to within that bucket's bounds); in the +Inf bucket, the highest finite bound. -1
 * when a scrape lacks the histogram, a count went back, or no request ended between. */
static double bench_hist_quantile(const double *a, const double *b, double q)
{
    double d[METRICS_NLE + 1];
    for (int i = 0; i <= METRICS_NLE; i++)
        if ((d[i] = bench_delta(a[i], b[i])) < 0)
            return -1;
    double want = q * d[METRICS_NLE];
    if (!(d[METRICS_NLE] > 0))
        return -1;
    int i = 0;
    while (i < METRICS_NLE && d[i] < want)
        i++;
    if (i == METRICS_NLE)
        return metrics_le_ms[METRICS_NLE - 1];
    double below = i ? d[i - 1] : 0, lo = i ? metrics_le_ms[i - 1] : 0;
    return lo + (metrics_le_ms[i] - lo) * (want - below) / (d[i] - below);
}

/* A scrape that read nothing: every figure unknown. */
static struct bench_scrape bench_scrape_none(void)
{
    struct bench_scrape m = {-1, -1, -1, -1, -1, {0}};
    bench_scrape_hist("", m.le);
    return m;
}

/* GET /metrics from 127.0.0.1:port (at most timeout_ms) and read the counters. */
static struct bench_scrape bench_scrape(int port, int timeout_ms)
{
    struct bench_scrape m = bench_scrape_none();
    struct sbuf page = {0};
    int64_t end = now_ns() + (int64_t)timeout_ms * NS_PER_MS;
    int fd = bench_dial(port, timeout_ms);
    if (fd >= 0 && bench_ask_metrics(fd)) {
        char buf[4096];
        for (ssize_t got;
             now_ns() < end && page.len < (1 << 20) && (got = read(fd, buf, sizeof buf)) > 0;)
            sbuf_add(&page, buf, (size_t)got); /* to the server's close */
    }
    if (fd >= 0)
        close(fd);
    if (page.p && !strncmp(page.p, "HTTP/1.1 200", 12)) {
        static const char fam[] = "agg_downstream_failures_total{reason=\"";
        for (const char *p = strstr(page.p, fam); p; p = strstr(p + 1, fam)) {
            const char *v = strstr(p, "} ");
            double x = v ? strtod(v + 2, NULL) : 0;
            m.failed = (m.failed < 0 ? 0 : m.failed) + x;
        }
        m.no_port = bench_metric(page.p, "agg_requests_failed_no_port_total");
        m.alloc_bytes = bench_metric(page.p, "agg_alloc_bytes_total");
        m.calls = bench_metric(page.p, "agg_downstream_calls_total");
        m.held_us = bench_metric(page.p, "agg_downstream_held_us_total");
        bench_scrape_hist(page.p, m.le);
    }
    sbuf_free(&page);
    return m;
}

/* --netns-ports: the cell gets a new network namespace and its own backend there (the last
 * cell's namespace keeps its ports in TIME_WAIT for a minute). */
static void bench_cell_netns(struct bench_cfg *bc, struct bench_kids *kids)
{
    char why[256];
    if (bc->netns_ports <= 0)
        return;
    if (netns_enter(bc->netns_ports, why, sizeof why) < 0) {
        bench_kill_all(kids);
        die("cannot make a private network namespace: %s", why);
    }
    bench_backend(bc, kids, bc->delay_ms);
}

/* The load generator's JSON report, read to its end (the child has exited); fd is closed. */
static void bench_read_all(int fd, struct sbuf *out)
{
    char buf[4096];
    for (ssize_t got; (got = read(fd, buf, sizeof buf)) > 0;)
        sbuf_add(out, buf, (size_t)got);
    if (!out->p)
        sbuf_add(out, "", 0);
    close(fd);
}

/* --timeline: the load's per_s pairs ([answers, errors] of each second) into the ticks. */
static void bench_ticks_from_json(struct bench_row *row, const char *json)
{
    const char *p = strstr(json, "\"per_s\":["); /* then p + 1 at each inner pair's '[' */
    p = p ? p + strlen("\"per_s\":") : NULL;
    for (int k = 0; p && k < row->nticks; k++) {
        p = strchr(p + 1, '[');
        char *end;
        if (!p || (row->ticks[k].served = (uint32_t)strtoul(p + 1, &end, 10), *end != ','))
            break;
        row->ticks[k].failed = (uint32_t)strtoul(end + 1, NULL, 10);
    }
}

/* Where a cell's samples are taken, ns: the CPU and /metrics at the window's two ends, and
 * with --timeline the end of every whole second since the load started. */
struct bench_clock {
    int64_t t_load, t_win[2];
    int tick; /* the next second to sample, 0-based */
};

/* What a cell's window is measured between, taken at each of its two ends. */
struct bench_sample {
    struct bench_cpu cpu; /* cpu.agg_us < 0: not taken yet */
    struct bench_scrape m;
};

static struct bench_sample bench_sample_now(const struct bench_cfg *bc, pid_t agg, pid_t load)
{
    const pid_t ours[] = {agg, bc->backend, bc->fail_backend, load};
    struct bench_cpu c = {bench_cpu_us(agg),
                          bench_cpu_us(bc->backend) + bench_cpu_us(bc->fail_backend) +
                              bench_cpu_us(load),
                          bench_others_cpu_us(ours, 4), bench_machine_cpu()};
    return (struct bench_sample){c, bench_scrape(bc->port + 1, BENCH_SCRAPE_MS)};
}

/* The soonest of the samples still to take after `now`, at most 50 ms away (the peaks). */
static int64_t bench_next_sample(const struct bench_clock *k, const struct bench_row *row,
                                 const struct bench_sample s[2], int64_t now)
{
    int64_t next = now + 50 * NS_PER_MS;
    for (int e = 0; e < 2; e++)
        if (s[e].cpu.agg_us < 0 && k->t_win[e] < next)
            next = k->t_win[e];
    int64_t tick_at = k->t_load + (int64_t)(k->tick + 1) * NS_PER_S;
    if (k->tick < row->nticks && tick_at < next)
        next = tick_at;
    return next;
}

/* --timeline: the samples of the seconds that have ended by `now`. TIME_WAIT is read first
 * (a read of /proc, at the second's end); the server's no_port counter is asked for the last
 * second ended only, for at most BENCH_TICK_SCRAPE_MS, so that a server slow to answer (a
 * saturated pool queues /metrics too) costs that second's figure (-1, unknown) and not the
 * clock of the seconds after it. */
static void bench_tick(const struct bench_cfg *bc, struct bench_row *row, struct bench_clock *k,
                       int64_t now)
{
    while (k->tick < row->nticks && now >= k->t_load + (int64_t)(k->tick + 1) * NS_PER_S) {
        struct bench_tick *t = &row->ticks[k->tick++];
        t->time_wait = proc_count_time_wait_to(bc->port, row->tw_low, row->tw_high);
        int last = now < k->t_load + (int64_t)(k->tick + 1) * NS_PER_S;
        t->no_port = last ? bench_scrape(bc->port + 1, BENCH_TICK_SCRAPE_MS).no_port : -1;
    }
}

/* Whether a child has ended, without reaping it (bench_kill does): if so, how, into how. */
static int bench_ended(pid_t pid, char *how, size_t len)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid != pid)
        return 0;
    if (si.si_code == CLD_EXITED)
        snprintf(how, len, "exited with status %d", si.si_status);
    else
        snprintf(how, len, "was killed by signal %d (%s)", si.si_status, strsignal(si.si_status));
    return 1;
}

/* Watch a cell while its load runs: the aggregator's peak threads every 50 ms, the samples at
 * the window's two ends into s, the timeline's seconds. The load generator measures from
 * BENCH_WARMUP_S after its start for duration_s; the CPU is sampled at those two instants
 * exactly. Returns 0 once the load has ended, 1 if the server has ended (a crash, the OOM
 * killer; the load may still run), 2 if the backend has (its calls fail: the cell would
 * measure errors, not the server), or -1 if interrupted (Ctrl-C); how the one that ended did,
 * into how. */
static int bench_watch(const struct bench_cfg *bc, struct bench_row *row, pid_t agg, pid_t load,
                       struct bench_sample s[2], char *how, size_t len)
{
    struct bench_clock k = {.t_load = now_ns()};
    k.t_win[0] = k.t_load + BENCH_WARMUP_S * NS_PER_S;
    k.t_win[1] = k.t_win[0] + (int64_t)(bc->duration_s * NS_PER_S);
    s[0] = s[1] = (struct bench_sample){.cpu = {.agg_us = -1}, .m = bench_scrape_none()};
    row->peak_threads = 0;
    for (;;) {
        if (bench_ended(agg, how, len)) /* first: a load whose server died ends soon after it */
            return 1;
        if (bc->backend > 0 && bench_ended(bc->backend, how, len))
            return 2;
        if (bench_ended(load, how, len))
            break;
        long th = proc_status_field(agg, "Threads");
        if (th > row->peak_threads)
            row->peak_threads = th;
        int64_t now = now_ns();
        for (int e = 0; e < 2; e++)
            if (s[e].cpu.agg_us < 0 && now >= k.t_win[e])
                s[e] = bench_sample_now(bc, agg, load);
        bench_tick(bc, row, &k, now);
        if (signals_wait_until(bench_next_sample(&k, row, s, now)))
            return -1;
    }
    if (s[1].cpu.agg_us < 0)
        s[1] = bench_sample_now(bc, agg, load);
    bench_tick(bc, row, &k, now_ns()); /* the seconds that ended as the load exited */
    return 0;
}

/* The server counts a request's no_port before its answer leaves, and bench reads the
 * counter just after the second's end (after the TIME_WAIT walk): a request failed in
 * between is the server's in this second and the client's in the next. Such requests move
 * to the second the client counted them in, so that a second's failed_no_port is among its
 * failed; a run's total stays the server's, but for what no second could hold (an unknown
 * second, -1, drops the carry). */
static void bench_ticks_align(struct bench_row *row)
{
    double carry = 0;
    for (int i = 0; i < row->nticks; i++) {
        struct bench_tick *t = &row->ticks[i];
        if (t->no_port < 0) {
            carry = 0;
            continue;
        }
        double n = t->no_port + carry;
        t->no_port = n < t->failed ? n : t->failed;
        carry = n - t->no_port;
    }
}

/* The cell's figures, from the load's JSON report and the window's samples s. */
static void bench_figures(const struct bench_cfg *bc, struct bench_row *row, const char *json,
                          const struct bench_sample s[2], double no_port_before)
{
    row->rps = bench_json_num(json, "throughput_rps");
    row->p50 = bench_json_num(json, "p50");
    row->p90 = bench_json_num(json, "p90");
    row->p99 = bench_json_num(json, "p99");
    row->errors = (long)bench_json_num(json, "errors");
    double completed = bench_json_num(json, "completed");
    bench_ticks_from_json(row, json);
    for (int i = row->nticks - 1; i >= 0; i--) /* the counter's increase in each second */
        row->ticks[i].no_port =
            bench_delta(i ? row->ticks[i - 1].no_port : no_port_before, row->ticks[i].no_port);
    bench_ticks_align(row);
    const struct bench_cpu *c0 = &s[0].cpu, *c1 = &s[1].cpu;
    int sampled = c0->all.work_us >= 0 && c1->all.work_us >= 0,
        counted = completed > 0 && c0->agg_us >= 0;
    double machine = sampled ? c1->all.work_us - c0->all.work_us : 0,
           served = row->rps * bc->duration_s, agg_us = c1->agg_us - c0->agg_us;
    row->cpu_us_per_req = counted ? agg_us / served : 0;
    row->steal_pct = sampled ? bench_steal_pct(c0->all, c1->all, bc->duration_s * 1e6) : 0;
    row->foreign_pct = sampled ? bench_foreign_pct(c0, c1, bc->duration_s * 1e6) : 0;
    row->other_cpu_us_per_req = counted ? nonneg(machine - agg_us) / served : 0;
    row->failed = bench_delta(s[0].m.failed, s[1].m.failed);
    row->failed_no_port = bench_delta(s[0].m.no_port, s[1].m.no_port);
    double alloc = bench_delta(s[0].m.alloc_bytes, s[1].m.alloc_bytes);
    row->alloc_per_req = alloc >= 0 && served > 0 ? alloc / served : -1;
    /* per request the window saw end, answered or failed: a fan-out's cost per request */
    double requests = completed + (row->errors > 0 ? (double)row->errors : 0),
           calls = bench_delta(s[0].m.calls, s[1].m.calls),
           held = bench_delta(s[0].m.held_us, s[1].m.held_us);
    row->calls_per_req = calls >= 0 && requests > 0 ? calls / requests : -1;
    row->call_ms_per_req = held >= 0 && requests > 0 ? held / 1e3 / requests : -1;
    row->failed_p50 = bench_json_num(json, "failed_p50_ms");
    row->failed_p99 = bench_json_num(json, "failed_p99_ms");
    row->server_p50 = bench_hist_quantile(s[0].m.le, s[1].m.le, 0.50);
    row->server_p99 = bench_hist_quantile(s[0].m.le, s[1].m.le, 0.99);
}

/* The cell's processes stopped and reaped (those that ended already, at once): the load
 * generator, the aggregator, and with --netns-ports the backend of the cell's namespace. */
static void bench_cell_stop(struct bench_cfg *bc, struct bench_kids *kids, pid_t agg, pid_t load)
{
    bench_kill(kids, load);
    bench_kill(kids, agg);
    if (bc->netns_ports > 0) {
        bench_kill(kids, bc->backend);
        bench_kill(kids, bc->fail_backend);
        bc->backend = bc->fail_backend = 0;
    }
}

/* Run one cell: start the aggregator, warm the JVM's JIT, load it, sample it, stop it.
 * Returns 0, -1 if interrupted (Ctrl-C), or 1 if the cell has no figures: the server or the
 * backend ended during it, or the load generator ended without its report (killed, say; it
 * exits 1 with one when no request succeeded, a wall's cell, which is a measurement). A row
 * of -1s would pass for a measurement, so the cell says why on stderr instead. */
static int bench_cell(struct bench_cfg *bc, struct bench_kids *kids, struct bench_row *row)
{
    bench_cell_netns(bc, kids);
    row->tw_low = row->tw_high = 0;
    pid_t agg = bench_start_server(bc, kids, row);
    row->base_rss = proc_status_field(agg, "VmRSS") * 1024;
    row->base_threads = proc_status_field(agg, "Threads");
    if (bench_jit_warmup(bc, kids, row) < 0) {
        bench_kill(kids, agg);
        return -1;
    }
    if (row->tw_high <= 0) { /* no JIT warm-up's range apart: the window's is the namespace's */
        struct net_ports np = proc_net_ports();
        row->tw_low = np.low;
        row->tw_high = np.high;
    }
    row->nticks = bc->timeline ? (int)ceil(BENCH_WARMUP_S + bc->duration_s) : 0;
    row->ticks = row->nticks ? xcalloc((size_t)row->nticks, sizeof *row->ticks) : NULL;
    double no_port_before = row->nticks ? bench_scrape(bc->port + 1, BENCH_SCRAPE_MS).no_port : -1;
    int report;
    char how[96];
    pid_t load = bench_load(bc, kids, NULL, row->users, bc->duration_s, BENCH_WARMUP_S, &report);
    struct bench_sample s[2];
    int watch = bench_watch(bc, row, agg, load, s, how, sizeof how);
    row->net = proc_net_ports();
    row->peak_rss = proc_status_field(agg, "VmHWM") * 1024;
    bench_cell_stop(bc, kids, agg, load);
    struct sbuf out = {0};
    bench_read_all(report, &out); /* the load has exited, or been stopped: its report ends */
    int rc = watch < 0 ? -1 : watch > 0 || bench_json_num(out.p, "completed") < 0;
    static const char *const who[] = {"load generator", "server under test", "backend"};
    if (rc > 0)
        fprintf(stderr, "bench: %d users %s %s: the %s %s %s; no figures for this cell\n",
                row->users, mode_names[row->mode], server_names[row->server], who[watch], how,
                watch ? "during the cell" : "without its report");
    if (watch == 2 &&
        bc->netns_ports <= 0) /* the next cells need one (netns: each starts its own) */
        bench_backend(bc, kids, bc->delay_ms);
    if (rc) {
        free(row->ticks);
        row->ticks = NULL;
    } else {
        bench_figures(bc, row, out.p, s, no_port_before);
    }
    sbuf_free(&out);
    return rc;
}

/* A cell measured while the hypervisor took more than this share of the cores (steal) is
 * measured once more, and the calmer measurement is kept: the model has no hypervisor, and
 * on a VM a neighbour's burst can slow one run by tens of percent. */
#define BENCH_STEAL_RETRY_PCT 5.0

/* The same for the CPU other processes took (bench_foreign_pct): a build or a test of
 * someone else on the machine. */
#define BENCH_FOREIGN_RETRY_PCT 10.0

static int bench_cell_calm(struct bench_cfg *bc, struct bench_kids *kids, struct bench_row *row)
{
    struct bench_row first = *row;
    int rc = bench_cell(bc, kids, row);
    if (rc)
        return rc;
    if (row->steal_pct <= BENCH_STEAL_RETRY_PCT && row->foreign_pct <= BENCH_FOREIGN_RETRY_PCT)
        return 0;
    fprintf(stderr,
            "bench: %d users %s %s: %.1f%% of the CPU stolen by the hypervisor, %.1f%% taken by "
            "other processes; measuring again\n",
            row->users, mode_names[row->mode], server_names[row->server], row->steal_pct,
            row->foreign_pct);
    struct bench_row disturbed = *row;
    *row = first;
    if ((rc = bench_cell(bc, kids, row))) {
        free(disturbed.ticks);
        return rc;
    }
    if (row->steal_pct + row->foreign_pct > disturbed.steal_pct + disturbed.foreign_pct) {
        free(row->ticks);
        *row = disturbed; /* the calmer of the two */
    } else {
        free(disturbed.ticks);
    }
    return 0;
}

enum { BENCH_ROW_TEXT = 0, BENCH_ROW_CSV = 1 }; /* bench_print_row: the format */

/* printf's width counts bytes: the "±" of a column is 2 bytes for 1 column on the screen. */
#define BENCH_RPS_W 26

/* The time a request's calls take with nothing queued, ms: K * D one after another, D when
 * the K go at once (--on-failure: ?parallel=1). The ideal throughput is N / (that + Z). */
static double bench_calls_ms(const struct bench_cfg *bc)
{
    return bc->on_failure >= 0 ? bc->delay_ms : (double)bc->fanout * bc->delay_ms;
}

static void bench_print_row(FILE *f, const struct bench_cfg *bc, const struct bench_row *r, int csv)
{
    const char *mode = mode_names[r->mode], *pool = r->pool ? "on" : "off";
    double jit = r->server == SERVER_JAVA ? bc->jit_warmup_s : 0,
           ideal = r->users / ((bench_calls_ms(bc) + bc->think_ms) / 1e3);
    if (csv) {
        double v[RES_N] = {
            [RES_USERS] = r->users,
            [RES_FANOUT] = bc->fanout,
            [RES_DELAY_MS] = bc->delay_ms,
            [RES_THROUGHPUT] = r->rps,
            [RES_P50] = r->p50,
            [RES_P90] = r->p90,
            [RES_P99] = r->p99,
            [RES_THREADS] = r->peak_threads,
            [RES_RSS] = r->peak_rss,
            [RES_CPU_US] = r->cpu_us_per_req,
            [RES_IDEAL] = ideal,
            [RES_ERRORS] = r->errors,
            [RES_OTHER_CPU_US] = r->other_cpu_us_per_req,
            [RES_RUNS] = r->runs,
            [RES_CI_LOW] = r->ci.lo,
            [RES_CI_HIGH] = r->ci.hi,
            [RES_MIN] = r->ci.min,
            [RES_MAX] = r->ci.max,
            [RES_PORT_LOW] = r->net.low,
            [RES_PORT_HIGH] = r->net.high,
            [RES_TW_REUSE] = r->net.tw_reuse,
            [RES_FAILED_NO_PORT] = r->failed_no_port,
            [RES_FAILED] = r->failed,
            [RES_ALLOC] = r->alloc_per_req,
            [RES_RAMPUP] = BENCH_WARMUP_S,
            [RES_WARMUP] = BENCH_WARMUP_S,
            [RES_WINDOW] = bc->duration_s,
            [RES_STEAL] = r->steal_pct,
            [RES_FOREIGN] = r->foreign_pct,
            [RES_JIT_WARMUP] = jit,
            [RES_FAIL_SHARE] = bc->fail_share,
            [RES_FAIL_AFTER_MS] = bc->fail_after_ms,
            [RES_FAILED_P50] = r->failed_p50,
            [RES_FAILED_P99] = r->failed_p99,
            [RES_CALLS] = r->calls_per_req,
            [RES_CALL_MS] = r->call_ms_per_req,
            [RES_SERVER_P50] = r->server_p50,
            [RES_SERVER_P99] = r->server_p99,
        };
        const char *w[RES_N] = {
            [RES_MODE] = mode,
            [RES_POOL] = pool,
            [RES_CLOSE_FIRST] = r->pool ? "-" : close_first_names[r->close_first],
            [RES_SERVER] = server_names[r->server],
            [RES_ON_FAILURE] = bc->on_failure < 0 ? "-" : on_failure_names[bc->on_failure],
            [RES_AUTH] = bc->auth ? bc->auth->name : "off"};
        csv_write_row(f, res_cols, RES_N, v, w);
        return;
    }
    char rps[64]; /* the throughput column: "mean ± half-width (min-max)", req/s */
    snprintf(rps, sizeof rps, "%.0f ± %.0f (%.0f-%.0f)", r->rps, r->ci.hi - r->rps, r->ci.min,
             r->ci.max);
    pool = r->pool ? "on" : r->close_first == CLOSE_SERVER ? "off/s" : "off/c";
    fprintf(f,
            "%6d %-8s %-5s %-4s %-*s %8.0f %5.0f%% %8.1f %8.1f %8.1f %7ld %8.1f %7.0f %6ld "
            "%5.1f%% %6.1f%% %8.0f %8.0f\n",
            r->users, mode, pool, server_names[r->server], BENCH_RPS_W + 1, rps, ideal,
            100 * r->rps / ideal, r->p50, r->p90, r->p99, r->peak_threads, r->peak_rss / 1048576.0,
            r->cpu_us_per_req, r->errors, r->steal_pct, r->foreign_pct, r->failed,
            r->failed_no_port);
}

static int bench_cmp_rps(const void *a, const void *b)
{
    double x = ((const struct bench_row *)a)->rps, y = ((const struct bench_row *)b)->rps;
    return (x > y) - (x < y);
}

static void bench_headers(const struct bench_cfg *bc, FILE *csv)
{
    csv_write_header(csv, res_cols, RES_N);
    printf("K=%d calls of D=%d ms, think %d ms, %g s per cell, %d run%s per point; ideal = "
           "N/(%s+Z)\n"
           "req/s: the mean of the runs ± the half-width of its Student-t 95%% interval "
           "(min-max of the runs); the other figures are the median run's\n",
           bc->fanout, bc->delay_ms, bc->think_ms, bc->duration_s, bc->runs,
           bc->runs == 1 ? "" : "s", bc->on_failure >= 0 ? "D, the K at once" : "K*D");
    if (bc->jvm)
        printf("java: %s %s%s-cp %s %s; %g s of load before each window for the JIT (not "
               "counted)\n",
               bc->jvm->java, bc->jvm->preview, *bc->jvm->preview ? " " : "", bc->jvm->classpath,
               bc->jvm->main, bc->jit_warmup_s);
    printf("failed: downstream calls the server counted as failed in the window (mean of the "
           "runs), no_port: requests that failed as a call's connect() got EADDRNOTAVAIL (ports "
           "exhausted; a request once, however many of its calls); -1: unknown, "
           "the server's /metrics did not answer within %g s (a saturated pool queues it behind "
           "the requests)\n",
           BENCH_SCRAPE_MS / 1000.0);
    if (bc->on_failure >= 0 || bc->fail_share > 0)
        printf("fan-out: %s%s; the first call's backend fails %g of its calls after %d ms; the "
               "CSV has the failed requests' p50 and p99, calls and ms of connection per request\n",
               bc->on_failure < 0 ? "one call after another" : "in parallel, --on-failure ",
               bc->on_failure < 0 ? "" : on_failure_names[bc->on_failure], bc->fail_share,
               bc->fail_after_ms);
    if (strcmp(bc->pool, "on"))
        printf("pool off/c: the aggregator closes each downstream connection first (the TIME_WAIT "
               "is its); off/s: the backend does (Connection: close)\n");
    printf("%6s %-8s %-5s %-4s %-*s %8s %6s %8s %8s %8s %7s %8s %7s %6s %6s %7s %8s %8s\n", "users",
           "mode", "pool", "srv", BENCH_RPS_W + 1, "req/s ± 95% (min-max)", "ideal", "ideal",
           "p50 ms", "p90 ms", "p99 ms", "threads", "RSS MiB", "CPU us", "errors", "steal",
           "others", "failed", "no_port");
}

/* The seconds a cell is planned to take: the load's warm-up and window, the JVM's start and
 * JIT warm-up, and about a second to start and stop the processes. */
static double bench_plan_s(const struct bench_cfg *bc, int server)
{
    return BENCH_WARMUP_S + bc->duration_s + 1 +
           (server == SERVER_JAVA ? bc->jit_warmup_s + BENCH_JAVA_START_GUESS_S : 0);
}

/* One line on stderr before each cell: which one, and the time left, estimated from the
 * plan scaled by how long the cells so far took against theirs (a cell measured again for
 * steal, a slow JVM start). */
static void bench_progress(struct bench_cfg *bc, const struct bench_row *point, int run, int runs)
{
    struct bench_progress *p = &bc->progress;
    if (!p->done)
        p->t0 = now_ns();
    double spent = (double)(now_ns() - p->t0) / NS_PER_S,
           scale = p->planned_done_s > 0 ? spent / p->planned_done_s : 1,
           left = (p->planned_s - p->planned_done_s) * scale;
    fprintf(stderr,
            "bench: cell %d of %d: %s %s, %d users, pool %s, run %d of %d; about %.0f min %02.0f "
            "s left\n",
            p->done + 1, p->cells, server_names[point->server], mode_names[point->mode],
            point->users,
            point->pool                          ? "on"
            : point->close_first == CLOSE_SERVER ? "off (server closes first)"
                                                 : "off (client closes first)",
            run + 1, runs, floor(left / 60), fmod(left, 60));
}

/* --timeline: the run's rows, one per second since its load started. */
static void bench_write_timeline(const struct bench_cfg *bc, const struct bench_row *r, int run)
{
    const char *w[TLC_N] = {[TLC_SERVER] = server_names[r->server],
                            [TLC_MODE] = mode_names[r->mode],
                            [TLC_POOL] = r->pool ? "on" : "off",
                            [TLC_CLOSE_FIRST] = r->pool ? "-" : close_first_names[r->close_first]};
    for (int k = 0; bc->timeline && k < r->nticks; k++) {
        double v[TLC_N] = {[TLC_USERS] = r->users,
                           [TLC_FANOUT] = bc->fanout,
                           [TLC_DELAY_MS] = bc->delay_ms,
                           [TLC_PORT_LOW] = r->net.low,
                           [TLC_PORT_HIGH] = r->net.high,
                           [TLC_TW_REUSE] = r->net.tw_reuse,
                           [TLC_RAMPUP] = BENCH_WARMUP_S,
                           [TLC_RUN] = run,
                           [TLC_T] = k + 1,
                           [TLC_SERVED] = r->ticks[k].served,
                           [TLC_FAILED] = r->ticks[k].failed,
                           [TLC_NO_PORT] = r->ticks[k].no_port,
                           [TLC_TIME_WAIT] = r->ticks[k].time_wait};
        csv_write_row(bc->timeline, tl_cols, TLC_N, v, w);
    }
}

/* n runs of a point of the grid (its users, pool, mode, server and close_first; the rest 0),
 * with the progress line before each where the grid is planned (bench_run). Returns 0, or as
 * bench_cell when a run did not end (-1 interrupted, 1 no figures: the point's other runs
 * skipped and the runs' ticks freed). */
static int bench_runs(struct bench_cfg *bc, struct bench_kids *kids, const struct bench_row *point,
                      struct bench_row *runs, int n)
{
    for (int r = 0; r < n; r++) {
        runs[r] = *point;
        if (bc->progress.cells)
            bench_progress(bc, point, r, n);
        int rc = bench_cell_calm(bc, kids, &runs[r]);
        double plan_s = bench_plan_s(bc, point->server);
        if (rc) { /* the point's runs left are skipped, and leave the plan the time left scales */
            bc->progress.done += n - r;
            bc->progress.planned_s -= (n - r) * plan_s;
            for (int i = 0; i < r; i++)
                free(runs[i].ticks);
            return rc;
        }
        bc->progress.done++;
        bc->progress.planned_done_s += plan_s;
    }
    return 0;
}

/* One point of the grid, named by the users, pool and mode of `point`: --runs cells. The
 * throughput is their mean with its interval and extremes; the other figures are the median
 * run's (by throughput). Returns 0, or as bench_runs when a run did not end (no row then). */
static int bench_point(struct bench_cfg *bc, struct bench_kids *kids, const struct bench_row *point,
                       FILE *csv)
{
    struct bench_row runs[16];
    double rps[16];
    int n = bc->runs < 16 ? bc->runs : 16, rc = bench_runs(bc, kids, point, runs, n);
    if (rc)
        return rc;
    double failed = 0, no_port = 0, alloc = 0; /* means per run; -1 if a run did not say */
    for (int r = 0; r < n; r++) {              /* in the order measured, before the sort */
        rps[r] = runs[r].rps;
        bench_write_timeline(bc, &runs[r], r + 1);
        free(runs[r].ticks);
        runs[r].ticks = NULL;
        failed = failed < 0 || runs[r].failed < 0 ? -1 : failed + runs[r].failed / n;
        no_port =
            no_port < 0 || runs[r].failed_no_port < 0 ? -1 : no_port + runs[r].failed_no_port / n;
        alloc = alloc < 0 || runs[r].alloc_per_req < 0 ? -1 : alloc + runs[r].alloc_per_req / n;
    }
    qsort(runs, (size_t)n, sizeof *runs, bench_cmp_rps);
    struct bench_row row = runs[n / 2];
    row.runs = n;
    row.ci = ci95_of(rps, n);
    row.rps = row.ci.mean;
    row.failed = failed;
    row.failed_no_port = no_port;
    row.alloc_per_req = alloc;
    bench_print_row(stdout, bc, &row, BENCH_ROW_TEXT);
    bench_print_row(csv, bc, &row, BENCH_ROW_CSV);
    fflush(stdout);
    out_check(csv, bc->out);
    return 0;
}

/* The backend's port and the aggregator's, the next one, are free: a server already there
 * would answer the load in ours' place (never measure a stranger). Exit 1 otherwise. */
static void bench_ports_free(const struct bench_cfg *bc)
{
    for (int port = bc->port; port <= bc->port + 1; port++) {
        int fd = io_listen("127.0.0.1", port, 1, NULL);
        if (fd < 0)
            die("port %d is in use (%s); choose others with --port", port, strerror(errno));
        close(fd);
    }
}

/* The points of the grid cmd_bench asked for, in the order measured: pooling on, then off
 * with each --close-first; each user count, each mode, each server. Returns how many (the
 * caller frees *out). */
static int bench_grid(const struct bench_cfg *bc, struct bench_row **out)
{
    int pools[2], npools = 0, closes[2], ncloses = 0, n = 0, cap = 16;
    if (strcmp(bc->pool, "off"))
        pools[npools++] = 1;
    if (strcmp(bc->pool, "on"))
        pools[npools++] = 0;
    for (int c = 0; c < 2; c++)
        if (!strcmp(bc->close_first, "both") || !strcmp(bc->close_first, close_first_names[c]))
            closes[ncloses++] = c;
    struct bench_row *g = xcalloc((size_t)cap, sizeof *g);
    for (int pi = 0; pi < npools; pi++)
        for (int ci = 0; ci < (pools[pi] ? 1 : ncloses); ci++) {
            char *save = NULL, *list = strdup(bc->users);
            for (char *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save))
                for (int mode = 0; mode < 2; mode++)
                    for (int si = 0; si < SERVER_N; si++) {
                        if (!strstr(bc->modes, mode_names[mode]) ||
                            !bench_has_server(bc->servers, si))
                            continue;
                        if (n == cap)
                            g = xrealloc(g, (size_t)(cap *= 2) * sizeof *g);
                        g[n++] = (struct bench_row){.users = atoi(u),
                                                    .pool = pools[pi],
                                                    .mode = mode,
                                                    .server = si,
                                                    .close_first = closes[ci]};
                    }
            free(list);
        }
    *out = g;
    return n;
}

/* The grid cmd_bench asked for: a backend (one per cell, in the cell's namespace, with
 * --netns-ports), then every point. Returns 0, 130 if interrupted (Ctrl-C), or 1 if a point
 * has no row (a run without figures, bench_cell; the grid goes on). */
static int bench_run(struct bench_cfg *bc)
{
    char why[256];
    if (bc->netns_ports > 0 && netns_enter(bc->netns_ports, why, sizeof why) < 0) {
        printf("bench: skipped: cannot make a private network namespace: %s\n", why);
        return 0;
    }
    bench_ports_free(bc);
    raise_fd_limit();
    signals_block();
    FILE *csv = out_open(bc->out);
    if (bc->timeline_path) {
        bc->timeline = out_open(bc->timeline_path);
        csv_write_header(bc->timeline, tl_cols, TLC_N);
        out_check(bc->timeline, bc->timeline_path);
    }
    bench_headers(bc, csv);
    out_check(csv, bc->out);
    struct bench_kids kids = {{0}};
    if (bc->netns_ports <= 0)
        bench_backend(bc, &kids, bc->delay_ms);
    struct bench_row *grid;
    struct bench_auth auths[4];
    char dir[] = "/tmp/aggregator-bench.XXXXXX";
    int nauth =
        bc->auths ? bench_auth_list(bc->auths, mkdtemp(dir) ? dir : "/tmp", auths, why, sizeof why)
                  : 1;
    if (nauth < 0)
        die("bench --auth: %s", why);
    if (!bc->auths)
        bench_auth_one(&auths[0], "off", 3, dir, why, sizeof why);
    int npoints = bench_grid(bc, &grid), rc = 0, missing = 0;
    bc->progress.cells = npoints * bc->runs * nauth;
    for (int i = 0; i < npoints; i++)
        bc->progress.planned_s += nauth * bc->runs * bench_plan_s(bc, grid[i].server);
    for (int a = 0; a < nauth && rc >= 0; a++) { /* the grid again for each --auth */
        bc->auth = &auths[a];
        if (bc->auths)
            printf("auth %s:%s%s\n", auths[a].name, *auths[a].serve ? " serve --auth " : " none",
                   auths[a].serve);
        for (int i = 0; i < npoints && rc >= 0; i++)
            missing += (rc = bench_point(bc, &kids, &grid[i], csv)) > 0;
    }
    bc->auth = NULL;
    free(grid);
    if (bc->auths) /* the keys bench made or copied */
        bench_auth_remove(auths, nauth, dir);
    bench_kill_all(&kids); /* the backend too */
    out_close(csv, bc->out);
    if (bc->timeline)
        out_close(bc->timeline, bc->timeline_path);
    if (rc < 0) {
        fprintf(stderr, "aggregator bench: interrupted; partial results in %s\n", bc->out);
        return 130;
    }
    printf("wrote %s%s%s\n", bc->out, bc->timeline ? " and " : "",
           bc->timeline ? bc->timeline_path : "");
    if (missing)
        fprintf(stderr,
                "aggregator bench: no row for %d of %d points: a run of each had no "
                "figures (above)\n",
                missing, npoints);
    return missing ? 1 : 0;
}

/* ---- III.4 Microbench ---- */

/* Raw switch: two contexts handing control back and forth, no scheduler involved. */
struct mb_pingpong {
    struct vt_ctx main, other;
};

static void mb_other(void *arg)
{
    struct mb_pingpong *p = arg;
    for (;;)
        vt_ctx_switch(&p->other, &p->main);
}

/* The floor a switch is measured against: the callee-saved registers and the stack pointer,
 * nothing else (no FP control state, no bookkeeping), as libaco and libdill switch. A
 * routine of its own, so the figure does not depend on ours. */
#if VT_SWITCH_X86_64
__asm__(".text\n"
        ".type mb_bare_swap,@function\n"
        "mb_bare_swap:\n"
        "    pushq %rbp\n    pushq %rbx\n    pushq %r12\n"
        "    pushq %r13\n    pushq %r14\n    pushq %r15\n"
        "    movq %rsp, (%rdi)\n    movq %rsi, %rsp\n"
        "    popq %r15\n    popq %r14\n    popq %r13\n"
        "    popq %r12\n    popq %rbx\n    popq %rbp\n"
        "    ret\n"
        ".size mb_bare_swap, .-mb_bare_swap\n");
__attribute__((visibility("hidden"))) void mb_bare_swap(void **from_sp, void *to_sp);
#define MB_BARE_SWAP(from, to) mb_bare_swap(&(from)->sp, (to)->sp)
#else
#define MB_BARE_SWAP(from, to) vt_ctx_switch(from, to) /* no bare routine here: ours */
#endif

static void mb_bare_other(void *arg)
{
    struct mb_pingpong *p = arg;
    for (;;)
        MB_BARE_SWAP(&p->other, &p->main);
}

/* ns per switch of the ping-pong: ours (vt_ctx_switch) or, with bare, the floor's. */
static double mb_switch_ns(long n, int bare)
{
    struct mb_pingpong *p = xcalloc(1, sizeof *p);
    size_t sz = 128 * 1024;
    char *stack = xmalloc(sz);
    vt_frame_init(&p->other, stack + sz, bare ? mb_bare_other : mb_other, p);
    vt_ctx_switch(&p->main, &p->other); /* warm up; the bare swap's frames are the same */
    int64_t t0 = now_ns();
    if (bare)
        for (long i = 0; i < n; i++)
            MB_BARE_SWAP(&p->main, &p->other);
    else
        for (long i = 0; i < n; i++)
            vt_ctx_switch(&p->main, &p->other);
    double ns = (double)(now_ns() - t0) / (2.0 * (double)n);
    free(stack);
    free(p);
    return ns;
}

/* Measurements that run on a virtual thread; results in ns (or bytes). */
struct mb_results {
    double yield_ns, park_io_ns, park_ring_ns, create_ns, rss_per_parked;
    long n;
    int no_rss; /* skip the 100,000 parked threads (mb_layers_measure) */
};

/* The park + unpark ring: MB_RING threads, more than a carrier's VT_STACKS run stacks, pass
 * one token round; each parks until its predecessor unparks it, then unparks its successor.
 * With more threads than run stacks every resume copies frames back in and evicts another
 * thread's (Loom's freeze and thaw), as in a server with many connections. */
enum { MB_RING = 64 };
struct mb_ring {
    struct vt *vt[MB_RING];
    long n; /* rounds */
};
struct mb_ring_arg {
    struct mb_ring *ring;
    int i;
};

static void mb_ring_member(void *arg)
{
    struct mb_ring_arg *a = arg;
    struct mb_ring *r = a->ring;
    for (long k = 0; k < r->n; k++) {
        vt_park();
        /* the last round's last unpark would go to thread 0, which has exited */
        if (k < r->n - 1 || a->i < MB_RING - 1)
            vt_wake(r->vt[(a->i + 1) % MB_RING], VT_WOKE_EVENT);
    }
}

/* ns per park + unpark (one thread unparks the next and parks: half of each is a park). The
 * token starts after every member has parked once, so no unpark leaves a permit. */
static double mb_ring_ns(long rounds)
{
    struct mb_ring *r = xcalloc(1, sizeof *r);
    struct mb_ring_arg *args = xcalloc(MB_RING, sizeof *args);
    r->n = rounds;
    for (int i = 0; i < MB_RING; i++) {
        args[i] = (struct mb_ring_arg){r, i};
        r->vt[i] = vt_spawn(mb_ring_member, &args[i], VT_JOINABLE);
    }
    vt_yield(); /* one carrier, FIFO: every member runs to its first park */
    int64_t t0 = now_ns();
    vt_wake(r->vt[0], VT_WOKE_EVENT);
    for (int i = 0; i < MB_RING; i++)
        vt_join(r->vt[i]);
    double ns = (double)(now_ns() - t0) / ((double)rounds * MB_RING);
    free(args);
    free(r);
    return ns;
}

static void mb_yielder(void *arg)
{
    long n = *(long *)arg;
    for (long i = 0; i < n; i++)
        vt_yield();
}

/* The ping-pong's reads take up to MB_ECHO_BUF bytes, as a server's do: a read that fills
 * its buffer does not prove the pipe drained, so with 1-byte reads every message would cost
 * a second read that sees EAGAIN (io_rw). One byte travels each way. */
enum { MB_ECHO_BUF = 64 };

static void mb_echo(void *arg)
{
    int *fd = arg; /* two pipes: read from the first (fd[0]), answer on the second (fd[3]) */
    char c[MB_ECHO_BUF];
    while (io_rw(fd[0], VT_READ, c, sizeof c, -1) == 1 && c[0])
        io_rw(fd[3], VT_WRITE, c, 1, -1);
}

static void mb_noop(void *arg)
{
    (void)arg;
}

static void mb_parker(void *arg)
{
    (void)arg;
    vt_park();
}

/* ns per yield: two threads alternate, each switching straight to the other (vt_yield: one
 * swap and one exchange of the front slot per yield; every 61st goes through the scheduler).
 * They run on different run stacks, so no frames are copied. */
static double mb_yield_ns(long n)
{
    long *cnt = xmalloc(sizeof *cnt);
    *cnt = n;
    struct vt *a = vt_spawn(mb_yielder, cnt, VT_JOINABLE),
              *b = vt_spawn(mb_yielder, cnt, VT_JOINABLE);
    int64_t t0 = now_ns();
    vt_join(a);
    vt_join(b);
    double ns = (double)(now_ns() - t0) / (2.0 * (double)n);
    free(cnt);
    return ns;
}

/* ns per park + unpark through epoll: a byte goes back and forth over two pipes. */
static double mb_park_io_ns(long rounds)
{
    int *fds = xmalloc(4 * sizeof *fds);
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) || pipe2(fds + 2, O_NONBLOCK | O_CLOEXEC))
        die("pipe");
    for (int i = 0; i < 4; i++)
        io_register(fds[i]);
    struct vt *e = vt_spawn(mb_echo, fds, VT_JOINABLE);
    int64_t t0 = now_ns();
    for (long i = 0; i < rounds; i++) {
        char c[MB_ECHO_BUF] = {1};
        io_rw(fds[1], VT_WRITE, c, 1, -1);
        io_rw(fds[2], VT_READ, c, sizeof c, -1);
    }
    double ns = (double)(now_ns() - t0) / (2.0 * (double)rounds);
    char zero = 0;
    io_rw(fds[1], VT_WRITE, &zero, 1, -1);
    vt_join(e);
    for (int i = 0; i < 4; i++)
        io_close(fds[i]);
    free(fds);
    return ns;
}

/* ns per create + run + exit + join. */
static double mb_create_ns(long n)
{
    int64_t t0 = now_ns();
    for (long i = 0; i < n; i++)
        vt_join(vt_spawn(mb_noop, NULL, VT_JOINABLE));
    return (double)(now_ns() - t0) / (double)n;
}

/* RSS per parked thread, 100,000 of them (bytes). */
static double mb_rss_per_parked(void)
{
    enum { PARKED = 100000 };
    struct vt **v = xcalloc(PARKED, sizeof *v);
#ifdef __GLIBC__
    malloc_trim(0); /* the previous run's freed threads would be reused unseen by RSS */
#endif
    long rss0 = proc_rss_bytes();
    for (int i = 0; i < PARKED; i++)
        v[i] = vt_spawn(mb_parker, NULL, VT_JOINABLE);
    vt_yield();
    double per = (double)(proc_rss_bytes() - rss0) / PARKED;
    for (int i = 0; i < PARKED; i++)
        vt_wake(v[i], VT_WOKE_EVENT);
    for (int i = 0; i < PARKED; i++)
        vt_join(v[i]);
    free(v);
    return per;
}

static void mb_runtime(void *arg)
{
    struct mb_results *r = arg;
    r->yield_ns = mb_yield_ns(r->n);
    r->park_io_ns = mb_park_io_ns(r->n / 50);
    r->park_ring_ns = mb_ring_ns(r->n / (20 * MB_RING) + 1);
    r->create_ns = mb_create_ns(r->n / 10);
    if (!r->no_rss)
        r->rss_per_parked = mb_rss_per_parked();
}

/* pthreads for comparison: two threads on one CPU passing a byte over pipes. */
struct mb_pt {
    int fd[4];
    long n;
};

static void mb_pin_cpu0(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *mb_pt_echo(void *arg)
{
    struct mb_pt *p = arg;
    mb_pin_cpu0();
    char c;
    for (long i = 0; i < p->n; i++)
        if (read(p->fd[0], &c, 1) != 1 || write(p->fd[3], &c, 1) != 1)
            break;
    return NULL;
}

static double mb_pthread_switch_ns(long n)
{
    struct mb_pt p = {.n = n};
    if (pipe(p.fd) || pipe(p.fd + 2))
        die("pipe");
    pthread_t t;
    cpu_set_t old;
    pthread_getaffinity_np(pthread_self(), sizeof old, &old);
    mb_pin_cpu0();
    pthread_create(&t, NULL, mb_pt_echo, &p);
    int64_t t0 = now_ns();
    char c = 1;
    for (long i = 0; i < n; i++)
        if (write(p.fd[1], &c, 1) != 1 || read(p.fd[2], &c, 1) != 1)
            break;
    double ns = (double)(now_ns() - t0) / (2.0 * (double)n);
    pthread_join(t, NULL);
    pthread_setaffinity_np(pthread_self(), sizeof old, &old);
    for (int i = 0; i < 4; i++)
        close(p.fd[i]);
    return ns;
}

/* The floor of the park + unpark ping-pong: the system calls it cannot avoid, on the same
 * pipes and the same kind of epoll, in one loop without a runtime. Each half round trip is
 * a write, an epoll_wait that reports the other end readable, and its read. ns per half. */
static double mb_park_floor_ns(long rounds)
{
    int fd[4], ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0 || pipe2(fd, O_NONBLOCK | O_CLOEXEC) || pipe2(fd + 2, O_NONBLOCK | O_CLOEXEC))
        die("pipe/epoll: %s", strerror(errno));
    for (int i = 0; i < 4; i++) { /* registered as io_register does */
        struct epoll_event e = {.events = IO_EPOLL_EVENTS, .data.u64 = (uint64_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd[i], &e) < 0) /* else the wait below never ends */
            die("epoll_ctl: %s", strerror(errno));
    }
    struct epoll_event ev[256];
    carrier_epoll_wait(ep, ev, (int)ARRAY_LEN(ev), 0); /* the write ends' first events */
    char c[MB_ECHO_BUF] = {1};
    int64_t t0 = now_ns();
    for (long i = 0; i < 2 * rounds; i++) {
        int *p = fd + 2 * (i & 1); /* pipe 0, then pipe 1 */
        if (write(p[1], c, 1) != 1 || carrier_epoll_wait(ep, ev, (int)ARRAY_LEN(ev), -1) < 1 ||
            read(p[0], c, sizeof c) != 1)
            die("park floor: %s", strerror(errno));
    }
    double ns = (double)(now_ns() - t0) / (2.0 * (double)rounds);
    for (int i = 0; i < 4; i++)
        close(fd[i]);
    close(ep);
    return ns;
}

static void *mb_pt_noop(void *arg)
{
    return arg;
}

static double mb_pthread_create_ns(long n)
{
    int64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, mb_pt_noop, NULL) == 0)
            pthread_join(t, NULL);
    }
    return (double)(now_ns() - t0) / (double)n;
}

static int mb_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* RSS per parked pthread with the pool's 256 KiB stacks: n threads wait on a condition. */
struct mb_gate {
    pthread_mutex_t mu; /* guards open and waiting */
    pthread_cond_t cv;
    int open, waiting;
};

static void *mb_gate_wait(void *arg)
{
    struct mb_gate *g = arg;
    pthread_mutex_lock(&g->mu);
    g->waiting++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static double mb_pthread_rss(int n)
{
    struct mb_gate g = {.open = 0};
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    pthread_t *t = xcalloc((size_t)n, sizeof *t);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    long rss0 = proc_rss_bytes();
    int made = 0;
    while (made < n && pthread_create(&t[made], &at, mb_gate_wait, &g) == 0)
        made++;
    pthread_mutex_lock(&g.mu);
    while (g.waiting < made)
        pthread_cond_wait(&g.cv, &g.mu);
    double per = made ? (double)(proc_rss_bytes() - rss0) / made : 0;
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    for (int i = 0; i < made; i++)
        pthread_join(t[i], NULL);
    pthread_attr_destroy(&at);
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
    free(t);
    return per;
}

/* What a pool thread does between writing a response and waiting for the next task
 * (pool_thread): take the pool's lock, hand the connection back to the poller (pool_watch:
 * read the clock for its deadline, append it to the deadline list, re-arm its one-shot
 * epoll event) and read the clock again for its idle wait (pool_wait_task). The real
 * pool_watch on a socket pair, uncontended; each round also unlinks the connection again
 * (pool_unwatch, three stores) to keep the list one long. ns per release. */
static double mb_pool_release_ns(long n)
{
    int sv[2];
    struct config cfg;
    config_defaults(&cfg);
    struct server srv = {.cfg = &cfg};
    struct pool p = {.srv = &srv, .epfd = epoll_create1(EPOLL_CLOEXEC)};
    pthread_mutex_init(&p.mu, NULL);
    if (p.epfd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        die("socketpair: %s", strerror(errno));
    struct conn conn = {.fd = sv[0], .srv = &srv};
    pool_arm(&p, &conn, EPOLL_CTL_ADD);
    volatile int64_t idle_deadline = 0;
    int64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&p.mu);
        pool_watch(&p, &conn, EPOLL_CTL_MOD);
        idle_deadline = now_ns() + (int64_t)cfg.thread_idle_ms * NS_PER_MS;
        pool_unwatch(&p, &conn);
        pthread_mutex_unlock(&p.mu);
    }
    double per = (double)(now_ns() - t0) / (double)n;
    (void)idle_deadline;
    pthread_mutex_destroy(&p.mu);
    close(sv[0]);
    close(sv[1]);
    close(p.epfd);
    return per;
}

/* Every micro-figure, as medians of `runs` runs; the enum indexes mb_figures. */
enum {
    MB_SWITCH,
    MB_YIELD,
    MB_PARK_IO,
    MB_PARK_FLOOR,
    MB_PARK_RING,
    MB_CREATE,
    MB_VT_RSS,
    MB_PT_SWITCH,
    MB_PT_CREATE,
    MB_PT_RSS,
    MB_POOL_RELEASE,
    MB_BASELINE,
    MB_N
};

/* Each figure's line, its JSON field, and the target the runtime is held to (0: none; the
 * switch's is relative: 1.1 x the bare swap measured in the same run). */
static const struct mb_figure {
    const char *name, *json;
    double target;
} mb_figures[MB_N] = {
    {"virtual thread switch (register swap), ns", "switch_ns", 1.1},
    {"virtual thread yield (to the next queued thread), ns", "yield_ns", 25},
    {"park + unpark through epoll (pipe ping-pong), ns", "park_unpark_ns", 1500},
    {"  its floor: write + epoll_wait + read, no runtime, ns", "park_unpark_floor_ns", 0},
    {"park + unpark, ring of 64 threads (frames copied), ns", "park_ring_ns", 0},
    {"virtual thread create + run + exit + join, ns", "create_ns", 60},
    {"RSS per parked virtual thread at 100,000, bytes", "parked_rss_bytes", 512},
    {"pthread switch on one CPU (pipe ping-pong), ns", "pthread_switch_ns", 0},
    {"pthread create + join, ns", "pthread_create_ns", 0},
    {"RSS per parked pthread (256 KiB stack), bytes", "pthread_rss_bytes", 0},
    {"pool thread release (lock, deadline list, epoll re-arm, clock), ns", "pool_release_ns", 0},
    {"bare register swap, the floor (same run), ns", "baseline_swap_ns", 0},
};

static void mb_measure(long n, int runs, double med[MB_N], double *lo, double *hi)
{
    double m[MB_N][16];
    for (int r = 0; r < runs; r++) {
        rt_start(1); /* one carrier: the figures are per CPU */
        struct mb_results res = {.n = n};
        rt_run(mb_runtime, &res);
        rt_shutdown();
        rt_join();
        m[MB_SWITCH][r] = mb_switch_ns(n, 0);
        m[MB_BASELINE][r] = mb_switch_ns(n, 1); /* right after: the same conditions */
        m[MB_YIELD][r] = res.yield_ns;
        m[MB_PARK_IO][r] = res.park_io_ns;
        m[MB_PARK_FLOOR][r] = mb_park_floor_ns(n / 50); /* the ping-pong's rounds */
        m[MB_PARK_RING][r] = res.park_ring_ns;
        m[MB_CREATE][r] = res.create_ns;
        m[MB_VT_RSS][r] = res.rss_per_parked;
        m[MB_PT_SWITCH][r] = mb_pthread_switch_ns(n / 20);
        m[MB_PT_CREATE][r] = mb_pthread_create_ns(n / 200);
        m[MB_PT_RSS][r] = mb_pthread_rss(1000);
        m[MB_POOL_RELEASE][r] = mb_pool_release_ns(n / 10);
    }
    for (int i = 0; i < MB_N; i++) {
        qsort(m[i], (size_t)runs, sizeof m[i][0], mb_cmp);
        med[i] = m[i][runs / 2];
        if (lo) {
            lo[i] = m[i][0];
            hi[i] = m[i][runs - 1];
        }
    }
}

/* What each fast path of I.9 buys: the runtime's figures with every layer on, with each
 * turned off in turn (fast_set_off), and with none, the simplest correct form that VT_SIMPLE
 * builds. Side by side: every run measures every row, one after the other, so a row's median
 * and the ratio below come from the same conditions. */
static const struct mb_layer {
    const char *name;
    int off; /* FAST_* bits */
} mb_layers[] = {
    {"all four layers", 0},
    {"without 1, the front slot", FAST_FRONT},
    {"without 2, direct switches (and 3)", FAST_DIRECT},
    {"without 3, the kept joiner stack", FAST_KEPT},
    {"without 4, polling in batches", FAST_POLL},
    {"none: the simplest correct form", FAST_ALL},
};
enum { MB_LAYER_ROWS = (int)ARRAY_LEN(mb_layers), MB_LAYER_COLS = 4 };
static const char *const mb_layer_cols[MB_LAYER_COLS] = {"yield", "create+join", "park+unpark",
                                                         "park ring"};

static void mb_layers_measure(long n, int runs, double med[MB_LAYER_ROWS][MB_LAYER_COLS])
{
    double m[MB_LAYER_ROWS][MB_LAYER_COLS][16];
    for (int r = 0; r < runs; r++)
        for (int l = 0; l < MB_LAYER_ROWS; l++) {
            struct mb_results res = {.n = n, .no_rss = 1};
            fast_set_off(mb_layers[l].off);
            rt_start(1);
            rt_run(mb_runtime, &res);
            rt_shutdown();
            rt_join();
            fast_set_off(0);
            const double fig[MB_LAYER_COLS] = {res.yield_ns, res.create_ns, res.park_io_ns,
                                               res.park_ring_ns};
            for (int k = 0; k < MB_LAYER_COLS; k++)
                m[l][k][r] = fig[k];
        }
    for (int l = 0; l < MB_LAYER_ROWS; l++)
        for (int k = 0; k < MB_LAYER_COLS; k++) {
            qsort(m[l][k], (size_t)runs, sizeof m[l][k][0], mb_cmp);
            med[l][k] = m[l][k][runs / 2];
        }
}

/* The table, and the simple form's figures as multiples of all four layers'. */
static void mb_layers_print(long n, int runs)
{
    double med[MB_LAYER_ROWS][MB_LAYER_COLS];
    mb_layers_measure(n, runs, med);
    printf("\nwhat each fast path (I.9) buys, ns, median of %d runs, rows side by side%s\n", runs,
           FAST_ON(FAST_ALL) ? "" : " (a VT_SIMPLE build: every row is the simple form)");
    printf("  %-40s", "");
    for (int k = 0; k < MB_LAYER_COLS; k++)
        printf(" %12s", mb_layer_cols[k]);
    for (int l = 0; l < MB_LAYER_ROWS; l++) {
        printf("\n  %-40s", mb_layers[l].name);
        for (int k = 0; k < MB_LAYER_COLS; k++)
            printf(" %12.1f", med[l][k]);
    }
    printf("\n  %-40s", "the simplest form / all four layers");
    for (int k = 0; k < MB_LAYER_COLS; k++)
        printf(" %11.2fx", med[MB_LAYER_ROWS - 1][k] / med[0][k]);
    printf("\n");
}

/* ---- III.5 Calibrate ---- */

enum { CAL_LATENCY_D_MS = 5 }; /* the backend delay of the latency runs */

/* ESTIMATE
 *   A CPU figure measured on a machine with other work (a developer's laptop always has
 *   some). Two things move it, and each has its cure:
 *   - Another job's CPU charged to our requests. /proc/stat's counters are the machine's, so
 *     a build beside the runs added its CPU to every request's. cal_cpu takes the machine's
 *     CPU less what processes not of the bench took (bench_foreign_pct: the larger of the
 *     machine's task time less the CPU clocks of the aggregator, the backend and the load
 *     generator, and the other processes' own clocks; a clock is the scheduler's
 *     sum_exec_runtime: it advances only while the process is on a CPU, and stolen time is
 *     not in it). Wall time per request (cores / throughput) would not
 *     do: it counts the time our threads waited for a core the other job held, which is
 *     the interference itself.
 *   - What the other job does to ours: the scheduler preempts our threads for its slices,
 *     its data evicts ours from the caches, and every such switch costs our process CPU.
 *     That only ever adds CPU to a run, never takes any away, and it comes and goes with
 *     the neighbour's phases, so it inflates some runs and not others. The estimate is
 *     therefore at the low end of the runs: the median of CAL_KEEP runs that agree, within
 *     CAL_TIGHT of their median, with at most CAL_BELOW run below them (cal_cluster). Not
 *     the minimum, which one run's luck can pull low (a window ending on a burst of
 *     answers); not the median of all runs, which a neighbour busy half the time moves by
 *     half its effect; and not a cluster with two runs or more below it, which is a
 *     neighbour's phase measured again and again. On a quiet machine the first --runs runs
 *     agree and this is their median, as it always was.
 *   A neighbour that holds a core through the whole calibration is another matter: it
 *   changes the point measured, not just the runs (our processes squeezed onto fewer cores
 *   find more events per wake-up and wake no other core, which costs a request less, and
 *   switch more and share the caches with the neighbour, which costs it more; a connection
 *   opened per call, all wake-ups and TCP handshakes, costs far less on one core than on
 *   two, so net.connect_cpu moves most). No estimate over runs undoes that; the
 *   noise beside each key shows it.
 *   When the runs so far hold no such cluster, calibrate measures the point once more, up to
 *   CAL_MAX_RUNS_FACTOR times --runs (at most 16) and CAL_TIME_FACTOR times the time the
 *   first --runs took; then it stops and refuses, saying which figure, its runs, the
 *   tightest spread it reached and the tolerance. With --runs 1 a figure is one run: it
 *   agrees with itself, and its noise is not known (the file says so). */
#define CAL_TIGHT           0.12
#define CAL_TIME_FACTOR     3.0
#define CAL_MAX_RUNS_FACTOR 3
enum { CAL_KEEP = 3, CAL_BELOW = 1, CAL_MAX_RUNS = 16 };

/* CPU per request of a run that the bench's own processes and the kernel spent, µs: the
 * aggregator's, plus the machine's rest less what other processes took (ESTIMATE above).
 * foreign_pct is of all the cores over the window, so per request it is that share of
 * cores x 1 s over the requests of 1 s. */
static double cal_cpu(const struct bench_row *r)
{
    double foreign =
        r->rps > 0 ? r->foreign_pct / 100 * (double)sysconf(_SC_NPROCESSORS_ONLN) * 1e6 / r->rps
                   : 0;
    return r->cpu_us_per_req + nonneg(r->other_cpu_us_per_req - foreign);
}

static int cal_cmp_cpu(const void *a, const void *b)
{
    double x = cal_cpu(a), y = cal_cpu(b);
    return (x > y) - (x < y);
}

/* The lowest `keep` of n ascending figures that agree (ESTIMATE above): the first window of
 * `keep` consecutive ones whose spread (last - first) is within tol of their median, with at
 * most CAL_BELOW figures below it. at is its first index, est its median, spread its relative
 * spread. Without one (at = -1), so that a refusal can say how close it came: spread is the
 * tightest of the low windows (at most CAL_BELOW below), and higher, higher_at the spread and
 * first index of the lowest window above them within tol, or else of the tightest (-1: none). */
struct cal_cluster {
    int at, kept;
    double est, spread;
    int higher_at;
    double higher;
};

static double cal_median(const double *x, int n)
{
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

static struct cal_cluster cal_cluster(const double *sorted, int n, int keep, double tol)
{
    struct cal_cluster c = {
        .at = -1, .kept = keep < n ? keep : n, .spread = INFINITY, .higher_at = -1};
    for (int i = 0; c.kept > 0 && i + c.kept <= n; i++) {
        double med = cal_median(sorted + i, c.kept),
               s = med > 0 ? (sorted[i + c.kept - 1] - sorted[i]) / med : INFINITY;
        if (s <= tol && i <= CAL_BELOW)
            return (struct cal_cluster){i, c.kept, med, s, -1, 0};
        if (i <= CAL_BELOW)
            c.spread = fmin(c.spread, s);
        else if (c.higher_at < 0 || (c.higher > tol && s < c.higher))
            c.higher_at = i, c.higher = s;
    }
    return c;
}

/* A calibration point: the aggregator in one configuration under one load. */
struct cal_point {
    int mode;                /* MODE_PLATFORM or MODE_VIRTUAL */
    int fanout;              /* K, downstream calls per request */
    int pool;                /* 1: downstream keep-alive pool; 0: a connection per call */
    int threads;             /* platform pool threads */
    int users;               /* N, the load generator's users */
    struct bench_auth *auth; /* the bearer token its server checks (NULL: none) */
};

/* Its measurement: `runs` runs, `kept` of them agreeing (cal_cluster: `need` must; 0: none
 * did, the point did not converge), row the run with the estimate's CPU per request (the kept runs'
 * median; for a light point, the median run), [lo, hi] the spread of that figure over all
 * the runs, [klo, khi] over the kept ones and kspread theirs (of their median); its noise,
 * the largest share of the cores' time (%) the hypervisor stole and other processes took
 * during a run. */
struct cal_result {
    struct bench_row row;
    double lo, hi, klo, khi, kspread;
    int higher_at; /* not converged: cal_cluster's tightest window above the low ones */
    double higher;
    double steal, foreign;
    double foreign_least; /* the least share other processes took in a run (%) */
    int runs, need, kept;
    double seconds; /* the point's runs took */
};

/* The server calibrate measures: the one its bench.servers names. */
static int cal_server(const struct bench_cfg *bc)
{
    return bench_has_server(bc->servers, SERVER_JAVA) ? SERVER_JAVA : SERVER_C;
}

/* The point's figures from its n runs (sorted here by CPU per request), at tolerance tol:
 * the estimate's run, the spreads, the worst noise. A light point (keep 0) takes the median
 * run and never fails to converge. */
static void cal_summarise(struct cal_result *res, struct bench_row *runs, int n, int keep,
                          double tol)
{
    double cpu[CAL_MAX_RUNS];
    qsort(runs, (size_t)n, sizeof *runs, cal_cmp_cpu);
    for (int i = 0; i < n; i++)
        cpu[i] = cal_cpu(&runs[i]);
    struct cal_cluster c = keep ? cal_cluster(cpu, n, keep, tol)
                                : (struct cal_cluster){0, n, cal_median(cpu, n), 0, -1, 0};
    *res = (struct cal_result){.row = runs[c.at >= 0 ? c.at + (c.kept - 1) / 2 : n / 2],
                               .lo = cpu[0],
                               .hi = cpu[n - 1],
                               .klo = c.at >= 0 ? cpu[c.at] : cpu[0],
                               .khi = c.at >= 0 ? cpu[c.at + c.kept - 1] : cpu[n - 1],
                               .kspread = c.spread,
                               .higher_at = c.higher_at,
                               .higher = c.higher,
                               .runs = n,
                               .need = c.kept,
                               .kept = c.at >= 0 ? c.kept : 0,
                               .seconds = res->seconds};
    res->foreign_least = runs[0].foreign_pct;
    for (int i = 0; i < n; i++) {
        res->steal = fmax(res->steal, runs[i].steal_pct);
        res->foreign = fmax(res->foreign, runs[i].foreign_pct);
        res->foreign_least = fmin(res->foreign_least, runs[i].foreign_pct);
    }
}

/* Whether a CPU point measures once more: its runs so far hold no CAL_KEEP that agree, and
 * it is within its bounds in runs and in time (ESTIMATE above). */
static int cal_more(const struct cal_result *res, int n, int runs, double first_s, double spent_s)
{
    int most =
        runs * CAL_MAX_RUNS_FACTOR < CAL_MAX_RUNS ? runs * CAL_MAX_RUNS_FACTOR : CAL_MAX_RUNS;
    return res->kept == 0 && n < most && spent_s < CAL_TIME_FACTOR * first_s;
}

/* What measures one run of a point: bench_cell, or a test's machine in its place. */
typedef int cal_runner(struct bench_cfg *bc, struct bench_kids *kids, struct bench_row *row);

/* A point of a group as cal_run_group measures it: its runs so far, and its own time. */
struct cal_series {
    struct bench_row runs[CAL_MAX_RUNS];
    int n;
    double first_s; /* its first --runs runs took, s (cal_more's bound) */
};

static void cal_describe(char *buf, size_t len, const struct bench_cfg *bc,
                         const struct cal_point *pt, int want, int cpu)
{
    snprintf(buf, len, "%s %s, K=%d, D=%d ms, pool %s, %d threads, %d users%s%s, %d runs%s",
             server_names[cal_server(bc)], mode_names[pt->mode], pt->fanout, bc->delay_ms,
             pt->pool ? "on" : "off", pt->threads, pt->users, pt->auth ? ", auth " : "",
             pt->auth ? pt->auth->name : "", want, cpu ? " or more" : "");
}

/* One more run of a point into its series, and its figures so far into res (once it has its
 * `want` runs). Returns 0, or as bench_cell. */
static int cal_run_once(cal_runner *run, struct bench_cfg *bc, struct bench_kids *kids,
                        const struct cal_point *pt, struct cal_series *s, struct cal_result *res,
                        int want, int cpu)
{
    struct bench_row *row = &s->runs[s->n];
    *row = (struct bench_row){
        .users = pt->users, .pool = pt->pool, .mode = pt->mode, .server = cal_server(bc)};
    bc->fanout = pt->fanout;
    bc->threads = pt->threads;
    bc->auth = pt->auth;
    int64_t t0 = now_ns();
    int rc = run(bc, kids, row);
    bc->auth = NULL;
    if (rc)
        return rc;
    double fig = cal_cpu(row); /* before cal_summarise sorts the runs */
    free(row->ticks);          /* calibrate runs no --timeline: none; whatever bench_cell made */
    row->ticks = NULL;
    res->seconds += (double)(now_ns() - t0) / 1e9;
    if (++s->n == want)
        s->first_s = res->seconds;
    if (s->n >= want)
        cal_summarise(res, s->runs, s->n, cpu ? (want < CAL_KEEP ? want : CAL_KEEP) : 0, CAL_TIGHT);
    if (s->n > want) {
        char what[192];
        cal_describe(what, sizeof what, bc, pt, want, cpu);
        fprintf(stderr, "calibrate: %s: run %d, %.1f us per request\n", what, s->n, fig);
    }
    return 0;
}

/* Measure a group of points, their runs in turn (a run of each, then again): bc->runs runs
 * each, and for CPU points (cpu) more of those whose runs do not agree, until they do or
 * the bounds are reached (cal_more, on each point's own time). A group's points are the
 * ones whose figures calibrate subtracts (K=3 less K=1 is a call's cost, a token's run less
 * the same run without it the check's): side by side, a drift of the machine over the
 * minutes scales both alike, and their difference by as much; one after the other, it moved
 * one of them only, and the difference by several times as much. Each run is one bench cell
 * (`run`: bench_cell, or a test's in its place), not bench's calmer of two
 * (bench_cell_calm): a disturbed run is what the estimate is robust to, and a second run is
 * better spent as one more sample. Returns 0, or as bench_cell (-1 interrupted, 1 no
 * figures). */
static int cal_run_group(cal_runner *run, struct bench_cfg *bc, struct bench_kids *kids,
                         const struct cal_point *pts, struct cal_result *const *res, int n, int cpu)
{
    int want = bc->runs < CAL_MAX_RUNS ? bc->runs : CAL_MAX_RUNS, rc = 0;
    struct cal_series *s = xcalloc((size_t)n, sizeof *s);
    for (int i = 0; i < n; i++)
        *res[i] = (struct cal_result){0};
    for (int more = 1; more && !rc;) {
        more = 0;
        for (int i = 0; i < n && !rc; i++)
            if (s[i].n < want ||
                (cpu && cal_more(res[i], s[i].n, want, s[i].first_s, res[i]->seconds)))
                more = 1, rc = cal_run_once(run, bc, kids, &pts[i], &s[i], res[i], want, cpu);
    }
    for (int i = 0; i < n && !rc; i++) {
        const struct cal_result *r = res[i];
        char what[192], agree[64] = "the median run";
        cal_describe(what, sizeof what, bc, &pts[i], want, cpu);
        if (cpu)
            snprintf(agree, sizeof agree, "%d of %d runs within %.0f%%", r->kept, r->runs,
                     100 * r->kspread);
        fprintf(stderr,
                "calibrate: %s: %.0f req/s, CPU %.1f us per request, %s (all %.1f..%.1f); "
                "other processes %.0f%%, hypervisor %.0f%% of the cores (worst run)%s\n",
                what, r->row.rps, cal_cpu(&r->row), agree, r->lo, r->hi, r->foreign, r->steal,
                r->kept ? "" : ": they do not agree");
    }
    free(s);
    return rc;
}

/* The backend's latency as a client sees it over loopback: the load generator, 20 users,
 * on /item/0?delay_ms=5 (short, so that the histogram's buckets are fine). */
static int cal_backend_latency(const struct bench_cfg *bc, struct bench_kids *kids, double *p50,
                               double *p90, double *p99)
{
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/item/0?delay_ms=%d", bc->port, CAL_LATENCY_D_MS);
    int report;
    pid_t load = bench_load(bc, kids, url, 20, bc->duration_s, 1, &report);
    struct sbuf json = {0};
    bench_read_all(report, &json);
    waitpid(load, NULL, 0);
    bench_forget(kids, load);
    *p50 = bench_json_num(json.p, "p50");
    *p90 = bench_json_num(json.p, "p90");
    *p99 = bench_json_num(json.p, "p99");
    sbuf_free(&json);
    return *p50 > 0 && *p90 >= *p50 && *p99 >= *p90 ? 0 : -1;
}

/* What the loopback adds to a call, in ms: the medians over bc->runs latency runs of p50,
 * p90 and p99, less D; 0 if none worked. A run during which the hypervisor stole CPU is
 * measured once more (see bench_cell_calm): its tail would be the neighbours'. */
struct cal_latency {
    double p50, p90, p99;
};

static struct cal_latency cal_call_latency(const struct bench_cfg *bc, struct bench_kids *kids)
{
    double q[3][16];
    int n = 0;
    fprintf(stderr, "calibrate: the backend's latency, %d runs...\n", bc->runs);
    for (int i = 0; i < bc->runs && i < 16; i++)
        for (int attempt = 0; attempt < 2; attempt++) {
            struct machine_cpu m0 = bench_machine_cpu();
            int64_t t0 = now_ns();
            if (cal_backend_latency(bc, kids, &q[0][n], &q[1][n], &q[2][n]) < 0)
                break;
            struct machine_cpu m1 = bench_machine_cpu();
            double steal = bench_steal_pct(m0, m1, (double)(now_ns() - t0) / 1e3);
            if (attempt == 1 || steal <= BENCH_STEAL_RETRY_PCT) {
                n++;
                break;
            }
            fprintf(stderr,
                    "calibrate: %.1f%% of the CPU stolen by the hypervisor; measuring again\n",
                    steal);
        }
    double med[3] = {CAL_LATENCY_D_MS, CAL_LATENCY_D_MS, CAL_LATENCY_D_MS};
    for (int k = 0; k < 3 && n > 0; k++) {
        qsort(q[k], (size_t)n, sizeof q[k][0], mb_cmp);
        med[k] = q[k][n / 2];
    }
    return (struct cal_latency){med[0] - CAL_LATENCY_D_MS, med[1] - CAL_LATENCY_D_MS,
                                med[2] - CAL_LATENCY_D_MS};
}

/* net.call_latency is a lognormal through the measured p50 and p90, its p99 extrapolated
 * (z = 2.326 against 1.282): a single stall of the VM in a 3 s run moves the measured p99
 * by milliseconds, the p90 hardly at all. The measured p99 goes in the comment. */
static void cal_write_latency(FILE *f, struct cal_latency l)
{
    if (!(l.p50 > 0 && l.p90 > l.p50))
        return;
    double p99 = l.p50 * pow(l.p90 / l.p50, 2.3263 / 1.2816);
    fprintf(f,
            "net.call_latency = lognormal(%.3fms, %.3fms)  # GET /item/0 seen by a client "
            "(20 users) less D = %d ms: p50 %.3f, p90 %.3f, so p99 %.3f (measured %.3f)\n",
            l.p50, p99, CAL_LATENCY_D_MS, l.p50, l.p90, p99, l.p99);
}

/* The token check's CPU per request (serve --auth, II.9): auth_check, the code serve runs
 * before /aggregate, on a request parsed as serve parses it, carrying a token as bench's load
 * mints it (its issuer, audience and lifetime; a fresh key of each algorithm). It is CPU on
 * one thread and nothing else, so it is measured here rather than under load (where the
 * machine's CPU per request moves by more than an HMAC costs): each batch of
 * CAL_AUTH_CHECKS checks on the thread's CPU clock (time the thread did not run is not
 * counted), the median of CAL_AUTH_BATCHES batches (a batch an interrupt or a cold cache
 * slowed is an outlier, not the figure). The simulator charges it to every request as the
 * first step of its program (sim's keys auth and auth.ALG_cpu): Spring Security's
 * BearerTokenAuthenticationFilter, before the controller. The JVM's check is timed the same
 * way by the JVM (java/Aggregator.java's TimeAuth, whose CHECKS and BATCHES are these). */
enum { CAL_AUTH_CHECKS = 500, CAL_AUTH_BATCHES = 21 };

/* The token check's CPU, two ways, by AUTH_HS256 and AUTH_RS256, µs:
 *   alone       med (lo..hi): auth_check timed in this process (cal_auth_one), or the JVM's
 *               in the JVM; 0: not measured;
 *   under load  with - without: the bench's CPU a request (cal_cpu) saturated with the check
 *               and without it, side by side (cal_runs); agg, the aggregator's own part of
 *               the difference; with 0: not measured, or its runs did not agree.
 * The key is the one under load: the simulator charges the check on the cores the bench
 * shares, and a request with a token costs them more than the check alone (the token's bytes
 * through the load generator, the kernel and the parser; the check's data in caches that
 * the other work shares), so the figure alone would put the CPU bound too high. The figure
 * alone is the floor: a difference below it is the runs' noise (cal_auth_cost). */
struct cal_auth {
    double med[2], lo[2], hi[2];
    double with[2], without, agg[2];
    int delay_ms, users; /* the point of the loaded runs */
    char noise[2][192];  /* the loaded runs' (cal_noise) */
};

/* The key's figure for alg (cal_auth above), with what it is in how. */
static double cal_auth_cost(const struct cal_auth *a, int alg, char *how, size_t len)
{
    double loaded = a->with[alg] - a->without;
    if (a->with[alg] > 0 && loaded >= a->med[alg]) {
        snprintf(how, len,
                 "under load: what a request with the check costs the bench more than one "
                 "without, saturated (virtual K=1, D = %d ms, %d users): %.1f - %.1f us, the "
                 "aggregator's own part %.1f; noise with it: %s. The check alone: ",
                 a->delay_ms, a->users, a->with[alg], a->without, a->agg[alg], a->noise[alg]);
        return loaded;
    }
    if (a->with[alg] > 0)
        snprintf(how, len,
                 "the check alone, as under load (saturated, virtual K=1) a request with it "
                 "cost the bench %.1f - %.1f us more than one without, below it: the runs' "
                 "noise. Alone: ",
                 a->with[alg], a->without);
    else
        snprintf(how, len, "the check alone (not measured under load): ");
    return a->med[alg];
}

static int64_t cal_thread_cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The check of alg into *med (and the batches' least and greatest), µs per check. Returns
 * 0, or -1 when a key could not be made or the check refused the token (then a figure
 * would time the early refusal, not the check). */
static int cal_auth_one(int alg, double *med, double *lo, double *hi)
{
    struct auth sign = {0}, check = {0};
    struct sbuf rq = {0};
    struct http_request req;
    double us[CAL_AUTH_BATCHES];
    int ok = auth_make(&sign, alg) == 0 && auth_public(&sign, &check) == 0;
    sign.issuer = check.issuer = BENCH_ISSUER;
    sign.audience = check.audience = BENCH_AUDIENCE;
    if (ok) {
        sbuf_add_str(&rq, "GET /aggregate HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ");
        auth_mint(&sign, 1, (int64_t)time(NULL), LOAD_TOKEN_LIFE_S, &rq);
        sbuf_add_str(&rq, "\r\n\r\n");
        ok = http_parse_request(rq.p, rq.len, &req) > 0 && auth_check(&check, &req) == 200;
    }
    for (int b = 0; ok && b < CAL_AUTH_BATCHES; b++) {
        int64_t t0 = cal_thread_cpu_ns();
        for (int i = 0; i < CAL_AUTH_CHECKS; i++)
            ok &= auth_check(&check, &req) == 200;
        us[b] = (double)(cal_thread_cpu_ns() - t0) / 1e3 / CAL_AUTH_CHECKS;
    }
    if (ok) {
        qsort(us, CAL_AUTH_BATCHES, sizeof us[0], mb_cmp);
        *med = us[CAL_AUTH_BATCHES / 2], *lo = us[0], *hi = us[CAL_AUTH_BATCHES - 1];
    }
    sbuf_free(&rq);
    auth_free(&sign);
    auth_free(&check);
    return ok ? 0 : -1;
}

/* The JVM's check of alg (java/Aggregator.java's TimeAuth, which says how it times it): a
 * fresh key and a token minted as cal_auth_one makes them, written into dir; the JVM times
 * its own BearerAuth.check in-process and prints the median, least and greatest µs per
 * check. Returns 0, or -1 (no key, the JVM did not answer, or its check refused the token). */
static int cal_auth_jvm_one(const struct jvm *j, int alg, const char *dir, double us[3])
{
    struct auth sign = {0};
    struct sbuf tok = {0}, out = {0};
    char key[PATH_MAX], path[PATH_MAX + 16], spec[PATH_MAX + 8];
    int ok = auth_make(&sign, alg) == 0 &&
             bench_auth_write(&sign, dir, alg == AUTH_RS256, key, sizeof key) == 0;
    sign.issuer = BENCH_ISSUER;
    sign.audience = BENCH_AUDIENCE;
    snprintf(path, sizeof path, "%s/%s.token", dir, auth_kinds[alg]);
    snprintf(spec, sizeof spec, "%s:%s", auth_kinds[alg], key);
    if (ok) {
        sbuf_add_str(&tok, "Bearer ");
        auth_mint(&sign, 1, (int64_t)time(NULL), LOAD_TOKEN_LIFE_S, &tok);
        sbuf_add_str(&tok, "\n");
        FILE *f = fopen(path, "w");
        ok = f && fwrite(tok.p, 1, tok.len, f) == tok.len;
        ok &= f && fclose(f) == 0;
    }
    int fd[2] = {-1, -1}, st = -1;
    if (ok && pipe2(fd, O_CLOEXEC) == 0) {
        const char *argv[20] = {j->java};
        size_t n = 1;
        for (int i = 0; i < j->nflags; i++)
            argv[n++] = j->flag[i];
        const char *tail[] = {"-cp",        j->classpath,      j->main,       "time-auth",
                              path,         "--auth",          spec,          "--auth-issuer",
                              BENCH_ISSUER, "--auth-audience", BENCH_AUDIENCE};
        for (size_t i = 0; i < ARRAY_LEN(tail); i++)
            argv[n++] = tail[i];
        struct bench_kids kids = {{0}};
        pid_t pid = bench_spawn(&kids, j->java, (char *const *)argv, fd[1], BENCH_STDERR_KEEP);
        close(fd[1]);
        bench_read_all(fd[0], &out);
        waitpid(pid, &st, 0);
    }
    ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
         sscanf(out.p, "%lf %lf %lf", &us[0], &us[1], &us[2]) == 3 && us[0] > 0;
    unlink(path);
    unlink(key);
    sbuf_free(&tok);
    sbuf_free(&out);
    auth_free(&sign);
    return ok ? 0 : -1;
}

/* The token check of the server calibrate measures, both algorithms: the C server's here, the
 * JVM's by the JVM itself (cal_auth_jvm_one). A 0 median: not measured. */
static void cal_auth_measure(struct cal_auth *a, const struct jvm *jvm)
{
    fprintf(stderr,
            "calibrate: the %s token check, HS256 and RS256 (median of %d batches of %d)...\n",
            jvm ? "JVM's" : "C server's", CAL_AUTH_BATCHES, CAL_AUTH_CHECKS);
    char dir[] = "/tmp/aggregator-calibrate.XXXXXX";
    if (jvm && !mkdtemp(dir))
        jvm = NULL, memset(a, 0, sizeof *a);
    for (int alg = 0; alg < 2; alg++) {
        double us[3] = {0};
        int rc = jvm ? cal_auth_jvm_one(jvm, alg, dir, us) : cal_auth_one(alg, us, us + 1, us + 2);
        a->med[alg] = rc < 0 ? 0 : us[0];
        a->lo[alg] = us[1];
        a->hi[alg] = us[2];
    }
    if (jvm)
        rmdir(dir);
}

/* auth.hs256_cpu and auth.rs256_cpu: the measured server's check (cal_auth_cost). */
static void cal_write_auth(FILE *f, int server, const struct cal_auth *a)
{
    static const char *const how[SERVER_N][2] = {
        {"auth_check (HMAC-SHA256, base64url, the claims)",
         "auth_check (EVP_DigestVerify of an RSA-2048 signature, base64url, the claims)"},
        {"BearerAuth.check (javax.crypto's HmacSHA256, base64url, the claims), after 3 s of "
         "checks for the JIT",
         "BearerAuth.check (java.security's SHA256withRSA, RSA-2048, base64url, the claims), "
         "after 3 s of checks for the JIT"}};
    for (int alg = 0; alg < 2; alg++) {
        char what[512];
        double cost = cal_auth_cost(a, alg, what, sizeof what);
        if (a->med[alg] > 0)
            fprintf(f,
                    "auth.%s_cpu = %.2fus  # %s --auth %s, %s%s on the thread's CPU clock, "
                    "%.2f us, median of %d batches of %d (%.2f..%.2f)\n",
                    auth_kinds[alg], cost, server == SERVER_JAVA ? "Aggregator.java" : "serve",
                    auth_kinds[alg], what, how[server][alg], a->med[alg], CAL_AUTH_BATCHES,
                    CAL_AUTH_CHECKS, a->lo[alg], a->hi[alg]);
        else
            fprintf(f, "# auth.%s_cpu: not measured (no key, or the check refused its token)\n",
                    auth_kinds[alg]);
    }
}

/* What calibrate measures: the load runs of cal_runs, the backend's latency, the microbench. */
struct cal_runs {
    struct cal_result served, threaded, queued;     /* light: memory, and the JVM's thread costs */
    struct cal_result saturated[2][2], big, nopool; /* CPU: [mode][fan-out 1 or 3], as cal_fit */
    struct cal_result authed[2]; /* CPU: virtual K=1 with the token check, by AUTH_HS256... */
    struct cal_latency lat;
    double mb[MB_N], mb_lo[MB_N], mb_hi[MB_N];
    struct cal_auth auth; /* the token check's CPU, in this process */
};

/* The CPU figures, from saturated runs (D = cpu-delay-ms, so that the CPU is the limit):
 *   c(K) = (per_request + K * per_call) * (1 + pressure * in_service)
 * K = 1 and 3 give the two costs; virtual K = 3 at `users` and 4 * `users` (all of them in
 * service, so the caches hold less of each) gives the pressure. A platform pool has at most
 * its threads in service, however many users wait. */
struct cal_cpu_fit {
    double pressure;
    double per_request[2], per_call[2], connect;
};

/* A point's figure at end 0, its estimate; at end -1 or 1, its kept runs' lowest or highest. */
static double cal_end(const struct cal_result *r, int end)
{
    if (end)
        return end < 0 ? r->klo : r->khi;
    return cal_cpu(&r->row);
}

/* w1 x - w2 y (w1, w2 >= 0) of two points' figures: at end 0 of their estimates; at end -1
 * or 1 the lowest or highest it can be with each figure anywhere in its kept runs' range,
 * x at that end and y at the other. */
static double cal_weigh(double w1, const struct cal_result *x, double w2,
                        const struct cal_result *y, int end)
{
    return w1 * cal_end(x, end) - w2 * cal_end(y, -end);
}

/* The fit at end 0 (cal_weigh), and at -1 and 1 the range of each cost over the kept runs
 * of the points it subtracts, the pressure held at its estimate. A call's cost is half of
 * K=3 less K=1, so its range is the two points' ranges added; the per-request cost, K=1 less
 * a call (1.5 k1 - 0.5 k3), is the line through K = 1 and 3 carried back to K = 0, and its
 * range 1.5 and 0.5 times theirs: a small cost beside a large call's is the loosest key. A
 * prediction at K = 1 or 3 adds them back, as tight as the points themselves. */
static struct cal_cpu_fit cal_fit_at(const struct cal_runs *m, int users, int threads, int end)
{
    struct cal_cpu_fit fit;
    const struct cal_result *v3 = &m->saturated[MODE_VIRTUAL][1];
    double ratio = cal_cpu(&m->big.row) / cal_cpu(&v3->row);
    int big_users = m->big.row.users;
    fit.pressure = m->big.kept ? nonneg((ratio - 1) / (big_users - ratio * users)) : 0;
    for (int mode = 0; mode < 2; mode++) {
        double in_service = mode == MODE_VIRTUAL ? users : users < threads ? users : threads;
        double scale = 1 + fit.pressure * in_service;
        const struct cal_result *k1 = &m->saturated[mode][0], *k3 = &m->saturated[mode][1];
        fit.per_call[mode] = nonneg(cal_weigh(0.5, k3, 0.5, k1, end)) / scale;
        fit.per_request[mode] = nonneg(cal_weigh(1.5, k1, 0.5, k3, end)) / scale;
    }
    fit.connect =
        nonneg(cal_weigh(1.0 / 3, &m->nopool, 1.0 / 3, v3, end)) / (1 + fit.pressure * users);
    return fit;
}

static struct cal_cpu_fit cal_fit(const struct cal_runs *m, int users, int threads)
{
    return cal_fit_at(m, users, threads, 0);
}

/* A CPU point's noise, for the comment beside each key its runs made: how many of its runs
 * agreed and how closely (ESTIMATE), the spread of them all, and the most other processes
 * and the hypervisor took of the cores during one (the estimate subtracts the former). */
static const char *cal_noise(char *buf, size_t len, const struct cal_result *r)
{
    if (r->runs == 1)
        snprintf(buf, len, "1 run, its noise not measured (--runs 3 measures it)");
    else
        snprintf(buf, len, "%d of %d runs within %.1f%% (all %.1f..%.1f)", r->kept, r->runs,
                 100 * r->kspread, r->lo, r->hi);
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, ", other processes %.0f%% and the hypervisor %.0f%% of the cores",
             r->foreign, r->steal);
    return buf;
}

/* The CPU keys, each fitted cost with its range over the kept runs (cal_fit_at). */
static void cal_write_cpu(FILE *f, const struct cal_runs *m, int users, int threads,
                          int cpu_delay_ms)
{
    const struct cal_cpu_fit est = cal_fit_at(m, users, threads, 0),
                             lo = cal_fit_at(m, users, threads, -1),
                             hi = cal_fit_at(m, users, threads, 1);
    const struct cal_result *v3 = &m->saturated[MODE_VIRTUAL][1], *big = &m->big;
    char noise[2][192];
    if (big->kept)
        fprintf(f,
                "cpu.cache_pressure = %.3g  # CPU per request grows by this per request in "
                "service: virtual K=3, %.1f us at %d users, %.1f us at %d; noise at %d: %s\n",
                est.pressure, cal_cpu(&v3->row), v3->row.users, cal_cpu(&big->row), big->row.users,
                big->row.users, cal_noise(noise[0], sizeof noise[0], big));
    else /* a JVM's at 4x the users: its collector's work differs run to run (TRUST) */
        fprintf(f,
                "# cpu.cache_pressure: not measured, so 0 (no growth with the requests in "
                "service): virtual K=3 at %d users did not agree, %d runs of %.1f..%.1f us, "
                "the lowest %d of them %.0f%% apart, over the %.0f%% tolerance\n",
                big->row.users, big->runs, big->lo, big->hi, big->need, 100 * big->kspread,
                100 * CAL_TIGHT);
    for (int mode = 0; mode < 2; mode++) {
        const struct cal_result *k1 = &m->saturated[mode][0], *k3 = &m->saturated[mode][1];
        fprintf(f,
                "%s.cpu_per_request = %.1fus  # the bench's CPU (the machine's less other "
                "processes'), saturated (D = %d ms, %d users): %.1f us at K=1 (aggregator %.1f), "
                "less a call: %.1f..%.1f over the kept runs; noise at K=1: %s\n",
                mode_names[mode], est.per_request[mode], cpu_delay_ms, k1->row.users,
                cal_cpu(&k1->row), k1->row.cpu_us_per_req, lo.per_request[mode],
                hi.per_request[mode], cal_noise(noise[0], sizeof noise[0], k1));
        fprintf(f,
                "%s.cpu_per_call = %.1fus  # per downstream call: (%.1f us at K=3 - K=1) / 2, "
                "less the cache pressure: %.1f..%.1f over the kept runs; noise at K=3: %s\n",
                mode_names[mode], est.per_call[mode], cal_cpu(&k3->row), lo.per_call[mode],
                hi.per_call[mode], cal_noise(noise[1], sizeof noise[1], k3));
        double agg_call = nonneg((k3->row.cpu_us_per_req - k1->row.cpu_us_per_req) / 2);
        fprintf(f,
                "# %s: the aggregator process alone spends %.1f us per request and %.1f us per "
                "call of that\n",
                mode_names[mode], nonneg(k1->row.cpu_us_per_req - agg_call), agg_call);
    }
    fprintf(f,
            "net.connect_cpu = %.1fus  # CPU per new TCP connection: (%.1f us without pooling - "
            "%.1f with) / 3: %.1f..%.1f over the kept runs; noise without pooling: %s\n",
            est.connect, cal_cpu(&m->nopool.row), cal_cpu(&v3->row), lo.connect, hi.connect,
            cal_noise(noise[0], sizeof noise[0], &m->nopool));
}

/* TRUST
 *   calibrate writes no figure it cannot trust. Each CPU figure comes from saturated runs,
 *   estimated as ESTIMATE says so that other work on the machine does not bias it; and the
 *   fit (cal_fit) turns differences of those figures into costs, clamped at 0, so a figure
 *   still wrong can make a cost 0, with which the simulator's CPU bound is far from the
 *   machine's. cal_trust refuses, saying which figure and why, when
 *     spread  a CPU point's runs held no CAL_KEEP that agree within CAL_TIGHT, after as many
 *             runs as its bounds allowed (exit 3: measure again, quieter or longer); but for
 *             the 4x-users point, which only gives cpu.cache_pressure: that key is left out
 *             (the simulator's 0) and the file says why (a JVM's heap at 4000 users grows
 *             past a GiB, and its collector's CPU per request differs run to run);
 *     cost    a fitted per-request or per-call cost is under CAL_CPU_MIN_US or over
 *             CAL_CPU_MAX_US (exit 1: a loopback request and a downstream call each cost
 *             syscalls and TCP processing, microseconds at least, never 0).
 *   Noise alone (other processes, the hypervisor) refuses nothing: it is in the file, beside
 *   each key its runs made. */
#define CAL_CPU_MIN_US 0.5
#define CAL_CPU_MAX_US 10000.0

enum { CAL_TRUSTED = 0, CAL_IMPLAUSIBLE = 1, CAL_NOISY = 3 }; /* cal_trust, exit statuses */

/* The CPU points by name: saturated[mode][k] at fan-out 1 + 2k, big and nopool as cal_fit
 * takes them. */
#define CAL_CPU_POINTS 6
struct cal_named {
    const char *name;
    const struct cal_result *r;
};

static void cal_cpu_points(const struct cal_runs *m, struct cal_named pts[CAL_CPU_POINTS])
{
    const struct cal_named all[CAL_CPU_POINTS] = {
        {"platform K=1", &m->saturated[0][0]}, {"platform K=3", &m->saturated[0][1]},
        {"virtual K=1", &m->saturated[1][0]},  {"virtual K=3", &m->saturated[1][1]},
        {"virtual K=3, 4x users", &m->big},    {"virtual K=3 without pooling", &m->nopool}};
    memcpy(pts, all, sizeof all);
}

/* Whether the CPU figures can be written: CAL_TRUSTED, or the status with the reason in
 * why (the points as cal_cpu_points takes them). */
static int cal_trust(const struct cal_cpu_fit *fit, const struct cal_runs *m, char *why, size_t len)
{
    struct cal_named pts[CAL_CPU_POINTS];
    cal_cpu_points(m, pts);
    for (size_t i = 0; i < CAL_CPU_POINTS; i++) {
        const struct cal_result *r = pts[i].r;
        if (!r->kept && r != &m->big) { /* big's pressure is left out instead (cal_fit) */
            char higher[160] = "";
            if (r->higher_at >= 0 && r->higher <= CAL_TIGHT)
                snprintf(higher, sizeof higher,
                         "; %d higher ones agreed within %.0f%%, but with %d runs below them (a "
                         "neighbour's phase, or the JIT's, measured again and again)",
                         r->need, 100 * r->higher, r->higher_at);
            snprintf(why, len,
                     "the %s runs did not agree: %d runs of %.1f to %.1f us of CPU per request "
                     "in %.0f s, the lowest %d of them %.0f%% apart, over the %.0f%% "
                     "tolerance%s",
                     pts[i].name, r->runs, r->lo, r->hi, r->seconds, r->need, 100 * r->kspread,
                     100 * CAL_TIGHT, higher);
            return CAL_NOISY;
        }
    }
    for (int mode = 0; mode < 2; mode++) {
        static const char *const what[2] = {"cpu_per_request", "cpu_per_call"};
        double v[2] = {fit->per_request[mode], fit->per_call[mode]};
        for (int k = 0; k < 2; k++)
            if (!(v[k] >= CAL_CPU_MIN_US && v[k] <= CAL_CPU_MAX_US)) {
                snprintf(why, len,
                         "%s.%s came out %.1f us, not a cost (%g..%g us): its K=1 and K=3 "
                         "runs measured %.1f and %.1f us per request",
                         mode_names[mode], what[k], v[k], CAL_CPU_MIN_US, CAL_CPU_MAX_US,
                         cal_cpu(&m->saturated[mode][0].row), cal_cpu(&m->saturated[mode][1].row));
                return CAL_IMPLAUSIBLE;
            }
    }
    return CAL_TRUSTED;
}

/* The noise the CPU figures were measured in, as a comment: each point's worst run. */
static void cal_write_noise(FILE *f, const struct cal_runs *m)
{
    struct cal_named pts[CAL_CPU_POINTS];
    cal_cpu_points(m, pts);
    fprintf(f, "# noise in the CPU runs (worst run; %% of the cores: other processes, "
               "hypervisor):");
    for (int i = 0; i < CAL_CPU_POINTS; i++)
        fprintf(f, "%s %s %.0f, %.0f", i ? ";" : "", pts[i].name, pts[i].r->foreign,
                pts[i].r->steal);
    fputc('\n', f);
}

/* A neighbour that held a share of the cores through every CPU run is no noise the estimate
 * can remove: our processes ran on the cores it left, where a call wakes fewer cores and a
 * connection's handshake crosses none, so the costs are that machine's (README's calibrate
 * paragraph). Over CAL_NEIGHBOUR_PCT in every run, calibrate says so, in the file and on
 * stderr. Returns the share held throughout, the message in why. */
#define CAL_NEIGHBOUR_PCT 10.0

static double cal_neighbour(const struct cal_runs *m, char *why, size_t len)
{
    struct cal_named pts[CAL_CPU_POINTS];
    cal_cpu_points(m, pts);
    double held = INFINITY;
    for (int i = 0; i < CAL_CPU_POINTS; i++)
        held = fmin(held, pts[i].r->foreign_least);
    snprintf(why, len,
             "other processes held at least %.0f%% of the cores in every CPU run: the costs "
             "are those of the cores they left (a call's and a connection's lower than on the "
             "whole machine); calibrate on a quiet machine for the whole machine's",
             held);
    return held;
}

/* The micro-figures as scenario keys: which figure, scaled to the unit, and how measured. */
enum { CAL_OS = 0, CAL_OURS = 1 }; /* cal_micro: a fact of the OS, or of this file's runtime */

static const struct {
    const char *key;
    int figure;
    double scale;
    int decimals;
    const char *unit, *how;
    int ours; /* a figure of this file's runtime: the JVM's is measured otherwise */
} cal_micro[] = {
    {"os.ctx_switch", MB_PT_SWITCH, 1, 0, "ns",
     "pthread switch on one CPU, pipe ping-pong (its syscalls included)", CAL_OS},
    {"os.thread_create", MB_PT_CREATE, 1e-3, 1, "us", "pthread_create + pthread_join", CAL_OS},
    {"os.stack_rss", MB_PT_RSS, 1, 0, "B", "RSS per parked pool thread, 1000 of them", CAL_OURS},
    {"platform.release_cpu", MB_POOL_RELEASE, 1, 0, "ns",
     "a pool thread after its response: the poller's deadline list (clock + append under its "
     "lock), its wake-up, the pool lock, uncontended",
     CAL_OURS},
    {"virtual.create", MB_CREATE, 1, 0, "ns",
     "create + run + exit + join of an empty virtual thread", CAL_OURS},
    {"virtual.park", MB_PARK_RING, 0.5, 0, "ns",
     "half a park + unpark in a ring of 64 threads on 4 run stacks, so frames are copied out "
     "and in (freeze and thaw) as with many connections; not half a yield, which is a direct "
     "switch without a copy",
     CAL_OURS},
    {"virtual.unpark", MB_PARK_RING, 0.5, 0, "ns", "the other half", CAL_OURS},
    {"virtual.stack_bytes", MB_VT_RSS, 1, 0, "B", "RSS per parked virtual thread at 100,000",
     CAL_OURS},
};

/* The micro-figures; for the JVM only the OS's (cal_write_jvm writes the others). */
static void cal_write_micro(FILE *f, int server, const double *med, const double *lo,
                            const double *hi)
{
    for (size_t i = 0; i < ARRAY_LEN(cal_micro); i++) {
        if (server == SERVER_JAVA && cal_micro[i].ours)
            continue;
        int fig = cal_micro[i].figure, d = cal_micro[i].decimals;
        double k = cal_micro[i].scale;
        fprintf(f, "%s = %.*f%s  # %s; median of 3 (%.*f..%.*f)\n", cal_micro[i].key, d,
                med[fig] * k, cal_micro[i].unit, cal_micro[i].how, d, lo[fig] * k, d, hi[fig] * k);
    }
    /* Both servers schedule as Loom's ForkJoinPool does (I.5 for ours); the simulator's
     * other policies (fifo, home) are for comparison. */
    fprintf(f, "virtual.scheduler = steal  # a FIFO run queue per carrier, an idle carrier "
               "steals the oldest thread (ForkJoinPool, asyncMode)\n");
}

/* The growth of a run's RSS under load, less the stacks of the threads it started. */
static double cal_grown(const struct bench_row *r, double stack_rss)
{
    return nonneg((double)(r->peak_rss - r->base_rss) -
                  (double)(r->peak_threads - r->base_threads) * stack_rss);
}

/* Memory: virtual K=3 serves all `users`; platform with users/5 threads queues the rest. */
static void cal_write_memory(FILE *f, const struct cal_result *served,
                             const struct cal_result *queued, double stack_rss, int users)
{
    const struct bench_row *all = &served->row, *few = &queued->row;
    int nserved = users / 5;
    double grown_all = cal_grown(all, stack_rss), grown_few = cal_grown(few, stack_rss);
    double per_req = nonneg((grown_all - grown_few) / (users - nserved));
    double per_conn = nonneg((grown_few - nserved * per_req) / users);
    fprintf(f, "mem.base = %ldB  # RSS of the idle aggregator (virtual mode)\n", all->base_rss);
    fprintf(f,
            "mem.per_request = %.0fB  # per request served: (virtual, all %d served) - (platform, "
            "%d of %d served)\n",
            per_req, users, nserved, users);
    fprintf(f, "mem.per_connection = %.0fB  # per open connection, from the same two runs\n",
            per_conn);
}

/* The servers' default --min-spare (Tomcat's minSpareThreads): pool threads from the start. */
enum { CAL_MIN_SPARE = 10 };

/* The RSS one more OS thread costs the JVM: the platform run (a pool thread per request in
 * service) against the virtual one (the same requests, no thread each), same load. */
static double cal_jvm_stack_rss(const struct bench_row *platform, const struct bench_row *virt)
{
    long threads = (platform->peak_threads - platform->base_threads) -
                   (virt->peak_threads - virt->base_threads);
    double rss = (double)(platform->peak_rss - platform->base_rss) -
                 (double)(virt->peak_rss - virt->base_rss);
    return threads > 0 ? nonneg(rss / (double)threads) : 0;
}

/* The threads each model has besides its pool or carriers, and what a thread costs. The C
 * server's are known from its code; the JVM's are counted (GC, JIT compilers, Tomcat's
 * acceptor, poller and utility threads), from the light runs `served` (virtual) and
 * `threaded` (platform, the same load). */
static void cal_write_threads(FILE *f, int server, const struct bench_row *served,
                              const struct bench_row *threaded, double stack_rss)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (server == SERVER_C) {
        fprintf(f, "os.stack_reserved = 256KiB  # the pool threads' stack size\n");
        fprintf(f, "platform.runtime_threads = 2  # threads besides the pool: main, the "
                   "acceptor/poller\n");
        fprintf(f, "virtual.runtime_threads = 1  # threads besides the carriers: main\n");
        return;
    }
    int in_service = threaded->users < 200 ? threaded->users : 200;
    fprintf(f, "os.stack_reserved = 1MiB  # the JVM's default -Xss (ThreadStackSize) on Linux\n");
    double measured = cal_jvm_stack_rss(threaded, served);
    fprintf(f,
            "os.stack_rss = %.0fB  # RSS per JVM thread: (platform - virtual) RSS growth over "
            "(platform - virtual) threads started, K=3, %d users: %.0f B%s\n",
            stack_rss, threaded->users, measured,
            measured > 0 ? ""
                         : " (the heap's growth hides it), so a parked pthread's from the "
                           "microbench");
    fprintf(f,
            "platform.runtime_threads = %ld  # OS threads of the idle JVM in platform mode once it "
            "answers (%ld) "
            "less Tomcat's %d spare pool threads; under load %ld at %d users, %d in service\n",
            threaded->base_threads - CAL_MIN_SPARE, threaded->base_threads, CAL_MIN_SPARE,
            threaded->peak_threads, threaded->users, in_service);
    fprintf(f,
            "virtual.runtime_threads = %ld  # OS threads of the virtual JVM under load (%ld at %d "
            "users; %ld idle, once it answers) less its %ld carriers\n",
            served->peak_threads - cores, served->peak_threads, served->users, served->base_threads,
            cores);
    fprintf(f, "virtual.parallelism = %ld  # carriers: the JDK's default, one per core\n", cores);
    fprintf(f, "platform.release_cpu = 0ns  # Tomcat's: inside platform.cpu_per_request, measured "
               "whole\n");
    fprintf(f, "virtual.create = 0ns  # the JVM's create, park and unpark: inside "
               "virtual.cpu_per_request and cpu_per_call, measured whole\n");
    fprintf(f, "virtual.park = 0ns\nvirtual.unpark = 0ns\n");
    fprintf(f, "virtual.stack_bytes = 0B  # a virtual thread's frames are heap: inside "
               "mem.per_request, measured whole\n");
}

static void cal_write_machine(FILE *f)
{
    struct net_ports np = proc_net_ports();
    if (np.low >= 0)
        fprintf(f, "net.port_low = %d  # ip_local_port_range\nnet.port_high = %d\n", np.low,
                np.high);
    if (np.tw_reuse >= 0)
        fprintf(f,
                "net.tw_reuse = %d  # tcp_tw_reuse = %d (2: loopback only; the bench is on "
                "loopback)\n",
                np.tw_reuse > 0, np.tw_reuse);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        fprintf(f, "# fd limit: %llu soft, %llu hard (raised to the hard limit for the runs)\n",
                (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
}

/* The backend delay of the CPU runs by default, per server: short, so that 1000 users
 * saturate the CPU. The JVM spends many times the C server's CPU per request, so 20 ms
 * saturates it too, and at 2 ms its virtual mode spends more CPU per call than at the 20 or
 * 50 ms waits of the bench's grid: the JVM is calibrated where it will be run. */
static const int cal_cpu_delay_ms[SERVER_N] = {2, 20};

/* What cmd_calibrate sets. */
struct cal_cfg {
    const char *out;    /* the file to write */
    const char *server; /* c or java: bench.servers */
    int users;          /* users of the memory runs (light load) */
    int cpu_users;      /* users of the CPU runs (saturated; 4x as many for the cache pressure) */
    int cpu_delay_ms;   /* backend delay D of the CPU runs, short to saturate the CPU */
    struct bench_cfg bench; /* duration_s, runs and port from the command line; the rest per run */
};

/* The file's first lines: who measured, where and when (the start of the run), and the JVM. */
static void cal_write_header(FILE *f, const char *out, int server, const struct bench_cfg *bc)
{
    time_t now = time(NULL);
    char host[64] = "?", when[32];
    gethostname(host, sizeof host - 1);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    fprintf(f, "# %s: costs measured by ./aggregator calibrate --server %s on %s, %s.\n", out,
            server_names[server], host, when);
    if (bc->jvm)
        fprintf(f,
                "# The JVM: %s %s%s-cp %s %s, after %g s of load before each window (the JIT).\n",
                bc->jvm->java, bc->jvm->preview, *bc->jvm->preview ? " " : "", bc->jvm->classpath,
                bc->jvm->main, bc->jit_warmup_s);
}

/* The load runs: the light ones first behind a backend of D = 50 ms (the saturated ones leave
 * the kernel busy: TIME_WAIT sockets), then the CPU runs behind one of their short delay, the
 * points whose figures are subtracted in one group, their runs in turn (cal_run_group): each
 * mode's K=1 and K=3, and with virtual K=1 the same point with the token check (its keys
 * made by bench_auth_one in a directory of their own). Returns 0, 130 if interrupted, or 1
 * if a run had no figures (no fit without it). */
static int cal_runs(struct cal_cfg *cc, struct cal_runs *m)
{
    struct bench_cfg *bc = &cc->bench;
    int u = cc->users, cu = cc->cpu_users, java = cal_server(bc) == SERVER_JAVA;
    struct bench_auth keys[2];
    char dir[] = "/tmp/aggregator-calibrate.XXXXXX", why[256] = "";
    memset(keys, 0, sizeof keys); /* bench_auth_remove reads both, made or not */
    int keyed = mkdtemp(dir) != NULL;
    if (!keyed)
        snprintf(why, sizeof why, "no directory for its keys: %s", strerror(errno));
    for (int alg = 0; alg < 2; alg++)
        keyed = keyed && bench_auth_one(&keys[alg], auth_kinds[alg], strlen(auth_kinds[alg]), dir,
                                        why, sizeof why) == 0;
    /* group: consecutive rows of one group measure their runs in turn (cal_run_group) */
    const struct {
        int cpu, group;       /* a CPU run; its group (0: alone) */
        struct cal_point pt;  /* mode, K, pool, threads, users */
        struct cal_result *r; /* NULL: not run */
    } plan[] = {
        {0, 0, {MODE_VIRTUAL, 3, 1, 200, u, NULL}, &m->served},
        {0, 0, {MODE_PLATFORM, 3, 1, 200, u, NULL}, java ? &m->threaded : NULL},
        {0, 0, {MODE_PLATFORM, 1, 1, u / 5, u, NULL}, &m->queued},
        {1, 1, {MODE_PLATFORM, 1, 1, 200, cu, NULL}, &m->saturated[MODE_PLATFORM][0]},
        {1, 1, {MODE_PLATFORM, 3, 1, 200, cu, NULL}, &m->saturated[MODE_PLATFORM][1]},
        {1, 2, {MODE_VIRTUAL, 1, 1, 200, cu, NULL}, &m->saturated[MODE_VIRTUAL][0]},
        {1, 2, {MODE_VIRTUAL, 1, 1, 200, cu, &keys[AUTH_HS256]}, keyed ? &m->authed[0] : NULL},
        {1, 2, {MODE_VIRTUAL, 1, 1, 200, cu, &keys[AUTH_RS256]}, keyed ? &m->authed[1] : NULL},
        {1, 2, {MODE_VIRTUAL, 3, 1, 200, cu, NULL}, &m->saturated[MODE_VIRTUAL][1]},
        {1, 0, {MODE_VIRTUAL, 3, 1, 200, 4 * cu, NULL}, &m->big},
        {1, 0, {MODE_VIRTUAL, 3, 0, 200, cu, NULL}, &m->nopool}};
    struct bench_kids kids = {{0}};
    bench_backend(bc, &kids, 50);
    m->lat = cal_call_latency(bc, &kids);
    int rc = 0;
    for (size_t i = 0, end; i < ARRAY_LEN(plan) && !rc; i = end) {
        struct cal_point pts[ARRAY_LEN(plan)];
        struct cal_result *res[ARRAY_LEN(plan)];
        int n = 0, refused = 0;
        for (end = i; end < ARRAY_LEN(plan) &&
                      (end == i || (plan[i].group && plan[end].group == plan[i].group));
             end++)
            if (plan[end].r)
                pts[n] = plan[end].pt, res[n++] = plan[end].r;
        if (plan[i].cpu && !plan[i - 1].cpu)
            bench_backend(bc, &kids, cc->cpu_delay_ms);
        if (n)
            rc = cal_run_group(bench_cell, bc, &kids, pts, res, n, plan[i].cpu);
        for (int k = 0; k < n && !rc; k++)
            refused |= plan[i].cpu && !res[k]->kept && res[k] != &m->big && !pts[k].auth;
        if (refused)
            break; /* refused (cal_trust says why): the points after it would be time lost */
    }
    bench_kill_all(&kids);
    bench_auth_remove(keys, 2, dir);
    if (!keyed)
        fprintf(stderr, "calibrate: the token check not measured under load: %s\n", why);
    return rc < 0 ? 130 : rc;
}

/* The token check under load into m->auth (cal_auth): each algorithm's saturated runs against
 * the same point's without it, where their runs agreed. */
static void cal_auth_loaded(struct cal_runs *m, const struct cal_cfg *cc)
{
    const struct cal_result *off = &m->saturated[MODE_VIRTUAL][0];
    m->auth.delay_ms = cc->cpu_delay_ms;
    m->auth.users = cc->cpu_users;
    m->auth.without = cal_cpu(&off->row);
    for (int alg = 0; alg < 2; alg++) {
        const struct cal_result *on = &m->authed[alg];
        int ok = on->kept && off->kept;
        m->auth.with[alg] = ok ? cal_cpu(&on->row) : 0;
        m->auth.agg[alg] = on->row.cpu_us_per_req - off->row.cpu_us_per_req;
        cal_noise(m->auth.noise[alg], sizeof m->auth.noise[alg], on);
    }
}

/* Why nothing was written, and what to do; returns the status (cal_trust's). */
static int cal_refuse(const char *out, int trust, const char *why)
{
    fprintf(stderr,
            "calibrate: refused, %s not written: %s.\n"
            "  Measure again %s, with more and longer runs (--runs 5 --duration 5).\n",
            out, why,
            trust == CAL_NOISY ? "when the machine is quiet (stop other jobs; top shows them)"
                               : "on a quiet machine; if it persists, raise --cpu-users "
                                 "until the CPU runs are saturated");
    return trust;
}

/* The scenario keys, after the header: every figure, with how it was measured. */
static void cal_write(FILE *f, const struct cal_cfg *cc, const struct cal_runs *m)
{
    const struct bench_cfg *bc = &cc->bench;
    int server = cal_server(bc);
    fprintf(
        f,
        "# Micro-figures are medians of 3 runs on one CPU; the load figures come from runs of %g s "
        "on\n"
        "# loopback: CPU saturated at D = %d ms, each point the median of its lowest %d of %d or "
        "more runs that\n"
        "# agree within %.0f%% (its noise beside its keys); memory at D = 50 ms, medians of %d "
        "runs.\n",
        bc->duration_s, cc->cpu_delay_ms, bc->runs < CAL_KEEP ? bc->runs : CAL_KEEP, bc->runs,
        100 * CAL_TIGHT, bc->runs);
    fprintf(f, "cores = %ld  # online CPUs\n", sysconf(_SC_NPROCESSORS_ONLN));
    cal_write_micro(f, server, m->mb, m->mb_lo, m->mb_hi);
    cal_write_cpu(f, m, cc->cpu_users, bc->threads, cc->cpu_delay_ms);
    cal_write_noise(f, m);
    char why[256];
    if (cal_neighbour(m, why, sizeof why) >= CAL_NEIGHBOUR_PCT)
        fprintf(f, "# %s\n", why);
    cal_write_auth(f, server, &m->auth);
    double stack_rss =
        server == SERVER_JAVA ? cal_jvm_stack_rss(&m->threaded.row, &m->served.row) : 0;
    if (!(stack_rss > 0))
        stack_rss = m->mb[MB_PT_RSS];
    cal_write_threads(f, server, &m->served.row, &m->threaded.row, stack_rss);
    cal_write_machine(f);
    cal_write_memory(f, &m->served, &m->queued, stack_rss, cc->users);
    cal_write_latency(f, m->lat);
}

/* Measure the costs the simulator takes as parameters and write them as scenario keys
 * (`key = value  # how`), for `./sim --calibration FILE` and `./sim --validate`.
 *   - micro-figures (switch, park, create, RSS per thread) from the microbench;
 *   - CPU per request, per downstream call, per new TCP connection, and the cache pressure,
 *     from saturated runs (see cal_fit). They count the bench's CPU (the aggregator, the
 *     backend, the load generator, the kernel's loopback TCP), because in the bench those
 *     share the cores, so the ceiling the model must find is theirs together; not other
 *     processes' (ESTIMATE).
 *     The saturated figure is the one that decides throughput: at light load each request
 *     costs more (every event wakes an idle CPU, where a busy server finds its events
 *     already waiting), but then there is CPU to spare;
 *   - memory: the idle RSS, and per connection / per request served (cal_write_memory);
 *   - the backend's latency distribution as a client sees it, and the kernel's port facts;
 *   - the token check's CPU, the C server's here, the JVM's by the JVM (cal_auth_measure).
 * Each memory figure is the median of --runs runs; each CPU figure is ESTIMATE's, with its
 * noise in the comment beside its key. */
static int cal_measure(struct cal_cfg *cc)
{
    const char *out = cc->out;
    struct bench_cfg *bc = &cc->bench;
    bench_ports_free(bc);
    /* Written to out.part, renamed over out only when trusted (cal_trust); a device such as
     * /dev/null is written in place, never renamed over. The header goes first, so a file
     * that cannot be written fails now, not after the runs. */
    struct stat st;
    int in_place = stat(out, &st) == 0 && !S_ISREG(st.st_mode);
    char part[PATH_MAX], why[512];
    snprintf(part, sizeof part, in_place ? "%s" : "%s.part", out);
    FILE *f = out_open(part);
    cal_write_header(f, out, cal_server(bc), bc);
    out_check(f, part);
    struct cal_runs m = {0};
    fprintf(stderr, "calibrate: microbench (median of 3)...\n");
    mb_measure(1000000, 3, m.mb, m.mb_lo, m.mb_hi);
    cal_auth_measure(&m.auth, bc->jvm);
    raise_fd_limit();
    signals_block();
    int rc = cal_runs(cc, &m);
    struct cal_cpu_fit fit = {0};
    if (!rc)
        fit = cal_fit(&m, cc->cpu_users, bc->threads);
    if (!rc)
        cal_auth_loaded(&m, cc);
    int trust = rc ? CAL_TRUSTED : cal_trust(&fit, &m, why, sizeof why);
    if (rc || trust != CAL_TRUSTED) {
        fclose(f);
        if (!in_place)
            unlink(part);
        if (rc == 1)
            fprintf(stderr, "calibrate: %s not written: a run has no figures (above)\n", out);
        return rc ? rc : cal_refuse(out, trust, why);
    }
    cal_write(f, cc, &m);
    out_close(f, part);
    if (!in_place && rename(part, out) < 0) {
        int e = errno;
        unlink(part);
        die("cannot write %s: %s", out, strerror(e));
    }
    if (cal_neighbour(&m, why, sizeof why) >= CAL_NEIGHBOUR_PCT)
        fprintf(stderr, "calibrate: %s\n", why);
    printf("wrote %s\n", out);
    return 0;
}

/* ==== Part IV. The command line ==== */

/* The flag tables and the subcommands. Tests: tests/test_faults.c (bad flags, exit statuses,
 * unwritable outputs: test_cli), tests/tutorial_check.sh (make tutorial-check: every command
 * README and TUTORIAL quote). */

/* ---- IV.1 Options ---- */

/* Each subcommand describes its flags in a table; opt_parse fills the destinations, prints
 * --help, and exits 2 with a clear message on a bad flag. */
enum opt_kind { OPT_INT, OPT_DOUBLE, OPT_STR, OPT_FLAG };

struct opt {
    const char *name; /* "--port" */
    int kind;         /* enum opt_kind */
    void *dst;        /* int *, double *, const char ** or int * (flag: set to 1) */
    const char *help; /* one line, with the default */
};

/* The length of the word at t: up to a space outside brackets, so that a synopsis's
 * "[--runs N]" stays on one line. */
static int opt_word(const char *t)
{
    int n = 0;
    for (int depth = 0; t[n] && (t[n] != ' ' || depth > 0); n++)
        depth += (t[n] == '[') - (t[n] == ']');
    return n;
}

/* Usage fits a terminal of OPT_COLUMNS: `text` is written from column `at`, where the cursor
 * is, and wraps between words to lines that start at column `indent`. */
#define OPT_COLUMNS 80
static void opt_wrap(FILE *f, const char *text, int at, int indent)
{
    while (*text) {
        int word = opt_word(text);
        int fresh = at == indent; /* nothing written on this line yet */
        if (!fresh && at + 1 + word > OPT_COLUMNS)
            at = fprintf(f, "\n%*s", indent, "") - 1, fresh = 1;
        at += fprintf(f, "%s%.*s", fresh ? "" : " ", word, text);
        text += word + strspn(text + word, " ");
    }
    fputc('\n', f);
}

/* "usage: aggregator CMD" and the flags after it, wrapped under the first flag. */
static void opt_synopsis(FILE *f, const char *synopsis)
{
    const char *flags = strchr(synopsis + strlen("aggregator "), ' ');
    int head = flags ? (int)(flags - synopsis) : (int)strlen(synopsis);
    fprintf(f, "usage: %.*s ", head, synopsis);
    opt_wrap(f, flags ? flags + 1 : "", 8 + head, 8 + head);
}

static void opt_usage(FILE *f, const char *synopsis, const struct opt *o, int n)
{
    opt_synopsis(f, synopsis);
    for (int i = 0; i < n; i++) {
        fprintf(f, "  %-18s ", o[i].name);
        opt_wrap(f, o[i].help, 21, 21);
    }
    fprintf(f, "  %-18s %s\n", "--help", "print this help");
}

static void opt_fail(const char *synopsis, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));
static void opt_fail(const char *synopsis, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "aggregator: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    opt_synopsis(stderr, synopsis);
    fputs("(try --help)\n", stderr);
    exit(2);
}

static void opt_parse(const char *synopsis, const struct opt *o, int n, int argc, char **argv)
{
    for (int a = 0; a < argc; a++) {
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            opt_usage(stdout, synopsis, o, n);
            exit(out_stdout(0));
        }
        int i = 0;
        while (i < n && strcmp(argv[a], o[i].name))
            i++;
        if (i == n)
            opt_fail(synopsis, "unknown flag '%s'", argv[a]);
        if (o[i].kind == OPT_FLAG) {
            *(int *)o[i].dst = 1;
            continue;
        }
        if (a + 1 >= argc)
            opt_fail(synopsis, "flag %s needs a value", argv[a]);
        const char *v = argv[++a];
        char *end;
        if (o[i].kind == OPT_STR) {
            *(const char **)o[i].dst = v;
        } else if (o[i].kind == OPT_INT) {
            long x = strtol(v, &end, 10);
            if (!*v || *end || x < 0 || x > INT_MAX)
                opt_fail(synopsis, "bad number '%s'", v);
            *(int *)o[i].dst = (int)x;
        } else {
            double x = strtod(v, &end);
            if (!*v || *end || !(x >= 0))
                opt_fail(synopsis, "bad number '%s'", v);
            *(double *)o[i].dst = x;
        }
    }
}

/* A port to listen on: 0 (any free one) to 65535. */
static void opt_check_port(const char *synopsis, int port)
{
    if (port > 65535)
        opt_fail(synopsis, "--port must be 0..65535 (0: any free port), not %d", port);
}

/* --threads and --carriers within what the machine can hold. Pool threads: the kernel's
 * limit on threads (kernel.threads-max) and this user's (RLIMIT_NPROC); past them a pool
 * would never reach its size, only keep a slot table of that many entries. Carriers: eight a
 * CPU, at most 256 (Loom's scheduler caps its carriers at 256, jdk.virtualThreadScheduler.
 * maxPoolSize): more than one per CPU only compete for it, and each is stopped and joined in
 * turn at shutdown, which must take well under a second. 0 carriers: one per CPU. */
static void opt_check_threads(const char *synopsis, int threads, int carriers)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN), most_carriers = 8 * (cpus > 0 ? cpus : 1);
    most_carriers = most_carriers < 256 ? most_carriers : 256;
    long long most_threads = 1 << 20;
    FILE *f = fopen("/proc/sys/kernel/threads-max", "r");
    long long kmax;
    if (f && fscanf(f, "%lld", &kmax) == 1 && kmax > 0 && kmax < most_threads)
        most_threads = kmax;
    if (f)
        fclose(f);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (long long)rl.rlim_cur < most_threads)
        most_threads = (long long)rl.rlim_cur;
    if (threads > most_threads)
        opt_fail(synopsis, "--threads %d: this machine holds at most %lld threads", threads,
                 most_threads);
    if (carriers < 0 || carriers > most_carriers)
        opt_fail(synopsis, "--carriers takes 0 (one per CPU) to %ld (8 a CPU, at most 256), not %d",
                 most_carriers, carriers);
}

/* bench's and calibrate's --port: the backend's, and the aggregator takes the next one; both
 * fixed, because a child's port must be known before it starts (no 0). */
static void opt_check_port_pair(const char *synopsis, int port)
{
    if (port < 1 || port > 65534)
        opt_fail(synopsis,
                 "--port must be 1..65534 (the backend's; the aggregator takes the next one), "
                 "not %d",
                 port);
}

/* bench's and calibrate's port pair when --port is not given (port < 0): the default, unless
 * the ephemeral range (net.ipv4.ip_local_port_range) holds either port, where any connect()
 * may have taken it as its source (and a backend connecting to a dead port there can meet
 * itself, client_self_connected); then the pair just below the range, or just above it. A
 * port given is used as given. */
static int opt_port_pair_default(int port, int def)
{
    struct net_ports np = proc_net_ports();
    if (port >= 0)
        return port;
    if (np.low < 0 || def + 1 < np.low || def > np.high)
        return def;
    return np.low - 2 >= 1024 ? np.low - 2 : np.high + 2 <= 65535 ? np.high + 1 : def;
}

/* A --users list (bench): counts from 1 to what the load generator, one connection a user,
 * may hold within its fd limit (load_max_users), comma-separated. */
static void opt_check_users(const char *synopsis, const char *list)
{
    long long fds = 0, most = load_max_users(0, &fds); /* bench's loads: a carrier per CPU */
    for (const char *p = list;; p += strcspn(p, ",") + 1) {
        size_t n = strcspn(p, ",");
        char *end;
        errno = 0;
        long long u = strtoll(p, &end, 10);
        if (!n || end != p + n || errno || u < 1 || u > most)
            opt_fail(synopsis,
                     "--users takes counts from 1 to %lld (one connection each, within the load "
                     "generator's %lld fds), comma-separated; got '%.*s'",
                     most, fds, (int)n, p);
        if (!p[n])
            return;
    }
}

/* ---- IV.2 Subcommands ---- */

/* --auth SPEC [--auth-issuer ISS] [--auth-audience AUD] into *keys (the private key for the
 * signing side, load's; the public one, serve's): keys, or NULL without --auth. */
static const struct auth *opt_auth(const char *synopsis, struct auth *keys, const char *spec,
                                   const char *issuer, const char *audience, int private)
{
    char why[512];
    if ((issuer || audience) && !spec)
        opt_fail(synopsis, "--auth-issuer and --auth-audience need --auth");
    if (!spec)
        return NULL;
    if (auth_load(keys, spec, private, why, sizeof why) < 0)
        opt_fail(synopsis, "%s", why);
    keys->issuer = issuer;
    keys->audience = audience;
    return keys;
}

#define SERVE_SYNOPSIS                                                                             \
    "aggregator serve --mode platform|virtual --port P --backends HOST:PORT[,HOST:PORT...]"        \
    " [--threads T] [--carriers C] [--no-pool [--close-first client|server]] [--pin] [--fanout K]" \
    " [--auth hs256:KEYFILE|rs256:PUBKEY.pem] [--auth-issuer ISS] [--auth-audience AUD] [...]"

static int cmd_serve(int argc, char **argv)
{
    struct config cfg;
    config_defaults(&cfg);
    const char *mode = "virtual", *backends = NULL, *close_first = NULL, *on_failure = NULL;
    const char *auth = NULL, *issuer = NULL, *audience = NULL;
    int no_pool = 0;
    const struct opt o[] = {
        {"--mode", OPT_STR, &mode,
         "platform (1:1 pool, Tomcat-like) or virtual (M:N); default virtual"},
        {"--host", OPT_STR, &cfg.host, "address to bind; default 127.0.0.1"},
        {"--port", OPT_INT, &cfg.port, "port to bind; default 0 (any free port, printed)"},
        {"--backends", OPT_STR, &backends, "downstream services HOST:PORT[,...]; required"},
        {"--fanout", OPT_INT, &cfg.fanout, "K, downstream calls per /aggregate; default 3"},
        {"--threads", OPT_INT, &cfg.threads,
         "platform: most pool threads (maxThreads); default 200"},
        {"--min-spare", OPT_INT, &cfg.min_spare, "platform: threads started up front; default 10"},
        {"--max-connections", OPT_INT, &cfg.max_connections,
         "connections held at most (both modes); default 8192"},
        {"--accept-count", OPT_INT, &cfg.accept_count,
         "listen backlog (virtual: per carrier); default 100"},
        {"--max-queue", OPT_INT, &cfg.max_queue,
         "platform: queued requests before 503; default 0 = unbounded"},
        {"--carriers", OPT_INT, &cfg.carriers, "virtual: carrier threads; default one per CPU"},
        {"--no-pool", OPT_FLAG, &no_pool,
         "a new downstream connection per call (no keep-alive pool)"},
        {"--close-first", OPT_STR, &close_first,
         "--no-pool: client (we close each connection: our TIME_WAIT) or server (Connection: "
         "close, the backend closes); default client"},
        {"--pool-max-idle", OPT_INT, &cfg.pool_max_idle,
         "idle downstream connections kept per backend; default 256"},
        {"--pool-idle-ms", OPT_INT, &cfg.pool_idle_ms,
         "a downstream connection idle this long is closed; default 15000"},
        {"--pin", OPT_FLAG, &cfg.pin,
         "virtual: pin the carrier across downstream calls (synchronized)"},
        {"--timeout-ms", OPT_INT, &cfg.timeout_ms, "downstream timeout, then 504; default 5000"},
        {"--idle-ms", OPT_INT, &cfg.idle_ms,
         "keep-alive idle timeout, and the deadline of a whole request; default 20000"},
        {"--write-timeout-ms", OPT_INT, &cfg.write_ms,
         "a response not taken by the client within this is dropped with its connection "
         "(at most --idle-ms); default 2000"},
        {"--max-per-client", OPT_INT, &cfg.max_per_client,
         "connections one client address may hold; default 3/4 of --max-connections, 0: no "
         "limit"},
        {"--thread-idle-ms", OPT_INT, &cfg.thread_idle_ms,
         "platform: idle pool threads exit, down to --min-spare; default 60000"},
        {"--on-failure", OPT_STR, &on_failure,
         "the fan-out's policy (/aggregate?parallel=1) when a call fails: cancel (virtual: the "
         "failed call's siblings are cancelled and the 502 is sent at once, a "
         "StructuredTaskScope) or wait (for every call, join-all); platform mode always waits "
         "(a pool thread in a blocking read cannot be cancelled); default cancel"},
        {"--auth", OPT_STR, &auth,
         "hs256:KEYFILE (the raw secret, >= 32 bytes) or rs256:PUBKEY.pem: /aggregate wants a "
         "bearer JWT so signed (401 otherwise); default: anyone may call"},
        {"--auth-issuer", OPT_STR, &issuer, "with --auth, the token's iss must be this"},
        {"--auth-audience", OPT_STR, &audience,
         "with --auth, the token's aud must be or contain this"},
    };
    opt_parse(SERVE_SYNOPSIS, o, (int)ARRAY_LEN(o), argc, argv);
    struct auth keys;
    cfg.auth = opt_auth(SERVE_SYNOPSIS, &keys, auth, issuer, audience, 0);
    opt_check_port(SERVE_SYNOPSIS, cfg.port);
    opt_check_threads(SERVE_SYNOPSIS, cfg.threads, cfg.carriers);
    if (!strcmp(mode, "platform"))
        cfg.mode = MODE_PLATFORM;
    else if (strcmp(mode, "virtual"))
        opt_fail(SERVE_SYNOPSIS, "--mode must be platform or virtual, not '%s'", mode);
    if (!backends || config_backends(&cfg, backends) < 0)
        opt_fail(SERVE_SYNOPSIS, "--backends needs HOST:PORT[,HOST:PORT...]");
    if (cfg.fanout < 1 || cfg.threads < 1 || cfg.max_connections < 1 || cfg.idle_ms < 1 ||
        cfg.pool_idle_ms < 1 || cfg.write_ms < 1)
        opt_fail(SERVE_SYNOPSIS, "--fanout, --threads, --max-connections, --idle-ms, "
                                 "--write-timeout-ms and --pool-idle-ms must be >= 1");
    if (cfg.max_per_client < -1) /* -1: the default, as if not given */
        opt_fail(SERVE_SYNOPSIS, "--max-per-client must be >= 0");
    if (cfg.fanout > AGG_MAX_FANOUT)
        opt_fail(SERVE_SYNOPSIS, "--fanout must be at most %d, not %d", AGG_MAX_FANOUT, cfg.fanout);
    cfg.pool = !no_pool;
    if (close_first && (cfg.pool || names_find(close_first_names, ARRAY_LEN(close_first_names),
                                               close_first, &cfg.close_first) < 0))
        opt_fail(SERVE_SYNOPSIS, "--close-first takes client or server, with --no-pool");
    if (on_failure &&
        names_find(on_failure_names, ARRAY_LEN(on_failure_names), on_failure, &cfg.on_failure) < 0)
        opt_fail(SERVE_SYNOPSIS, "--on-failure takes cancel or wait, not '%s'", on_failure);
    int rc = serve_until_signal(&cfg, agg_route, "serve");
    free(cfg.backends);
    if (auth)
        auth_free(&keys);
    return rc;
}

#define BACKEND_SYNOPSIS                                                                           \
    "aggregator backend --port P --delay-ms D [--jitter-ms J] [--fail-share F --fail-after-ms M]"  \
    " [--carriers C]"

static int cmd_backend(int argc, char **argv)
{
    struct config cfg;
    config_defaults(&cfg);
    cfg.accept_count = 4096;
    cfg.idle_ms = 120000;
    cfg.max_per_client = 0; /* its one client is the aggregator */
    const struct opt o[] = {
        {"--host", OPT_STR, &cfg.host, "address to bind; default 127.0.0.1"},
        {"--port", OPT_INT, &cfg.port, "port to bind; default 0 (any free port, printed)"},
        {"--delay-ms", OPT_INT, &cfg.delay_ms,
         "D, answer delay (a ?delay_ms= query overrides); default 0"},
        {"--jitter-ms", OPT_INT, &cfg.jitter_ms, "add a uniform random 0..J ms; default 0"},
        {"--fail-share", OPT_DOUBLE, &cfg.fail_share,
         "F, 0..1: this share of the calls answers 500 after --fail-after-ms instead of the "
         "delay; deterministic, call n (from 0) fails when floor((n+1)F) > floor(nF), so "
         "0.25 fails calls 3, 7, 11, ...; default 0"},
        {"--fail-after-ms", OPT_INT, &cfg.fail_after_ms,
         "M, a failing call's delay before its 500; default 0"},
        {"--carriers", OPT_INT, &cfg.carriers, "carrier threads; default one per CPU"},
        {"--accept-count", OPT_INT, &cfg.accept_count, "listen backlog per carrier; default 4096"},
    };
    opt_parse(BACKEND_SYNOPSIS, o, (int)ARRAY_LEN(o), argc, argv);
    opt_check_port(BACKEND_SYNOPSIS, cfg.port);
    opt_check_threads(BACKEND_SYNOPSIS, 1, cfg.carriers);
    if (!(cfg.fail_share >= 0 && cfg.fail_share <= 1))
        opt_fail(BACKEND_SYNOPSIS, "--fail-share takes a share from 0 to 1, not %g",
                 cfg.fail_share);
    if (cfg.fail_after_ms < 0 || cfg.fail_after_ms > BACKEND_MAX_DELAY_MS)
        opt_fail(BACKEND_SYNOPSIS, "--fail-after-ms takes 0 to %d ms, not %d", BACKEND_MAX_DELAY_MS,
                 cfg.fail_after_ms);
    return serve_until_signal(&cfg, backend_route, "backend");
}

#define LOAD_SYNOPSIS                                                                              \
    "aggregator load --url URL [--users N] [--duration S] [--warmup S] [--think-ms Z] [--rate R]"  \
    " [--json [--per-second]] [--timeout-ms T] [--carriers C]"                                     \
    " [--auth hs256:KEYFILE|rs256:PRIVKEY.pem] [--auth-issuer ISS] [--auth-audience AUD]"

static int cmd_load(int argc, char **argv)
{
    struct load_cfg cfg;
    load_defaults(&cfg);
    const char *url = NULL, *auth = NULL, *issuer = NULL, *audience = NULL;
    const struct opt o[] = {
        {"--url", OPT_STR, &url, "http://HOST:PORT/PATH to load; required"},
        {"--users", OPT_INT, &cfg.users, "N, concurrent users, one connection each; default 100"},
        {"--duration", OPT_DOUBLE, &cfg.duration_s,
         "S, seconds measured (at most 86400, a day); default 10"},
        {"--warmup", OPT_DOUBLE, &cfg.warmup_s,
         "seconds of traffic before the window (not counted; at most 86400); default 1"},
        {"--think-ms", OPT_INT, &cfg.think_ms,
         "Z, think time between requests (closed loop); default 0"},
        {"--rate", OPT_DOUBLE, &cfg.rate,
         "R, open loop: total requests/s on a fixed schedule; default 0 = closed"},
        {"--timeout-ms", OPT_INT, &cfg.timeout_ms, "per-request timeout; default 30000"},
        {"--carriers", OPT_INT, &cfg.carriers, "carrier threads; default one per CPU"},
        {"--json", OPT_FLAG, &cfg.json, "print one JSON object instead of the text summary"},
        {"--per-second", OPT_FLAG, &cfg.per_second,
         "--json: add per_s, [answers, errors] of each second since the users started"},
        {"--auth", OPT_STR, &auth,
         "hs256:KEYFILE or rs256:PRIVKEY.pem: each user sends a bearer JWT so signed, its own, "
         "valid " STR(LOAD_TOKEN_LIFE_S) " s and minted again before it ends"},
        {"--auth-issuer", OPT_STR, &issuer, "with --auth, the tokens' iss"},
        {"--auth-audience", OPT_STR, &audience, "with --auth, the tokens' aud"},
    };
    opt_parse(LOAD_SYNOPSIS, o, (int)ARRAY_LEN(o), argc, argv);
    struct auth keys;
    cfg.auth = opt_auth(LOAD_SYNOPSIS, &keys, auth, issuer, audience, 1);
    if (!url || load_parse_url(&cfg, url) < 0)
        opt_fail(LOAD_SYNOPSIS,
                 "--url needs http://HOST:PORT/PATH (no spaces or control characters), got '%s'",
                 url ? url : "");
    if (cfg.users < 1 || !(cfg.duration_s > 0) || cfg.timeout_ms < 1)
        opt_fail(LOAD_SYNOPSIS, "need --users >= 1, --duration > 0 and --timeout-ms >= 1");
    if (!(cfg.duration_s <= LOAD_MAX_S) || !(cfg.warmup_s >= 0 && cfg.warmup_s <= LOAD_MAX_S))
        opt_fail(LOAD_SYNOPSIS, "--duration and --warmup: at most %d s (a day), --warmup >= 0",
                 LOAD_MAX_S);
    opt_check_threads(LOAD_SYNOPSIS, 1, cfg.carriers);
    long long fds = 0, most = load_max_users(cfg.carriers, &fds);
    if (cfg.users > most)
        opt_fail(LOAD_SYNOPSIS,
                 "--users %d: each user holds a connection, and this process may open %lld fds "
                 "(ulimit -n): at most %lld users",
                 cfg.users, fds, most);
    /* one connection first: a server that is not there is said at once, not after the run */
    int fd = io_connect(&cfg.addr, now_ns() + (int64_t)cfg.timeout_ms * NS_PER_MS);
    if (fd < 0)
        die("load: cannot connect to %s: %s", url, strerror(errno));
    close(fd);
    int rc = load_run_cli(&cfg);
    if (auth)
        auth_free(&keys);
    return rc;
}

#define BENCH_SYNOPSIS                                                                             \
    "aggregator bench [--users 100,1000,5000] [--modes platform,virtual] [--pool on|off|both] "    \
    "[--close-first client|server|both] [--fanout K]"                                              \
    " [--delay-ms D] [--duration S] [--runs N] [--server c|java|c,java] [--jit-warmup S]"          \
    " [--netns-ports N] [--timeline FILE] [--out results.csv] [--on-failure cancel|wait]"          \
    " [--fail-share F --fail-after-ms M] [--auth off,hs256,rs256]"

static int cmd_bench(int argc, char **argv)
{
    struct bench_cfg bc = {.users = "100,1000,5000",
                           .servers = "c",
                           .jit_warmup_s = BENCH_JIT_WARMUP_S,
                           .modes = "platform,virtual",
                           .pool = "on",
                           .close_first = "client",
                           .on_failure = -1,
                           .fanout = 3,
                           .delay_ms = 50,
                           .duration_s = 10,
                           .runs = 1,
                           .threads = 200,
                           .port = -1, /* not given: opt_port_pair_default */
                           .out = "results.csv"};
    const char *on_failure = NULL;
    const struct opt o[] = {
        {"--users", OPT_STR, &bc.users, "user counts, comma-separated; default 100,1000,5000"},
        {"--modes", OPT_STR, &bc.modes, "platform,virtual (or one of them); default both"},
        {"--pool", OPT_STR, &bc.pool, "downstream pooling: on, off or both; default on"},
        {"--close-first", OPT_STR, &bc.close_first,
         "pool off: client (the aggregator closes first), server or both; default client"},
        {"--fanout", OPT_INT, &bc.fanout, "K, downstream calls per request; default 3"},
        {"--delay-ms", OPT_INT, &bc.delay_ms, "D, backend delay; default 50"},
        {"--think-ms", OPT_INT, &bc.think_ms, "Z, users' think time; default 0"},
        {"--duration", OPT_DOUBLE, &bc.duration_s, "seconds measured per cell; default 10"},
        {"--runs", OPT_INT, &bc.runs,
         "runs per cell (at most 16): req/s is their mean and 95% interval; default 1"},
        {"--threads", OPT_INT, &bc.threads, "platform pool threads; default 200"},
        {"--carriers", OPT_INT, &bc.carriers, "virtual carriers; default one per CPU"},
        {"--port", OPT_INT, &bc.port,
         "backend port (the aggregator uses the next one); default 19300, or the pair below the "
         "ephemeral range where the range holds it"},
        {"--out", OPT_STR, &bc.out, "results CSV; default results.csv"},
        {"--timeline", OPT_STR, &bc.timeline_path,
         "FILE: per second of each run, requests served and failed, failed_no_port (of those, "
         "for want of a port), the downstream connections' TIME_WAIT (CSV)"},
        {"--netns-ports", OPT_INT, &bc.netns_ports,
         "N: each cell in a private network namespace, N ephemeral ports, tcp_tw_reuse 0"},
        {"--server", OPT_STR, &bc.servers,
         "c (this file), java (java/Aggregator.java on Tomcat) or c,java; default c"},
        {"--jit-warmup", OPT_DOUBLE, &bc.jit_warmup_s,
         "java: seconds of load before each window, for the JIT (not counted); default " STR(
             BENCH_JIT_WARMUP_S)},
        {"--on-failure", OPT_STR, &on_failure,
         "cancel or wait: the K calls in parallel (?parallel=1) under serve's policy; default: "
         "one after another"},
        {"--fail-share", OPT_DOUBLE, &bc.fail_share,
         "the backend's: a share 0..1 of its calls answered 500 ...; default 0"},
        {"--fail-after-ms", OPT_INT, &bc.fail_after_ms, "... after M ms; default 0"},
        {"--auth", OPT_STR, &bc.auths,
         "off,hs256,rs256 (keys made by bench) or hs256:KEYFILE, rs256:PRIVKEY.pem: the grid "
         "once for each, the server wanting bearer tokens that each user mints; default off"},
    };
    opt_parse(BENCH_SYNOPSIS, o, (int)ARRAY_LEN(o), argc, argv);
    if (on_failure &&
        names_find(on_failure_names, ARRAY_LEN(on_failure_names), on_failure, &bc.on_failure) < 0)
        opt_fail(BENCH_SYNOPSIS, "--on-failure takes cancel or wait, not '%s'", on_failure);
    if (!(bc.fail_share >= 0 && bc.fail_share <= 1) || bc.fail_after_ms < 0 ||
        bc.fail_after_ms > BACKEND_MAX_DELAY_MS)
        opt_fail(BENCH_SYNOPSIS, "--fail-share takes 0 to 1, --fail-after-ms 0 to %d",
                 BACKEND_MAX_DELAY_MS);
    if (!bench_servers_valid(bc.servers) || !(bc.jit_warmup_s >= 0))
        opt_fail(BENCH_SYNOPSIS, "--server takes c, java or c,java, --jit-warmup a number >= 0");
    int some_mode = strstr(bc.modes, "platform") || strstr(bc.modes, "virtual");
    int close_ok =
        !strcmp(bc.close_first, "both") ||
        names_find(close_first_names, ARRAY_LEN(close_first_names), bc.close_first, &(int){0}) == 0;
    if (!some_mode || (strcmp(bc.pool, "on") && strcmp(bc.pool, "off") && strcmp(bc.pool, "both")))
        opt_fail(BENCH_SYNOPSIS, "bad --modes or --pool");
    if (!close_ok)
        opt_fail(BENCH_SYNOPSIS, "--close-first takes client, server or both");
    if (bc.runs < 1 || bc.runs > 16 || bc.fanout < 1 || bc.fanout > AGG_MAX_FANOUT ||
        !(bc.duration_s > 0) || bc.threads < 1)
        opt_fail(BENCH_SYNOPSIS,
                 "need 1 <= --runs <= 16, 1 <= --fanout <= %d, --duration > 0 and --threads >= 1",
                 AGG_MAX_FANOUT);
    if (bc.netns_ports && (bc.netns_ports < 16 || bc.netns_ports > 65536 - NETNS_PORT_LOW))
        opt_fail(BENCH_SYNOPSIS, "--netns-ports takes 16 to %d ports", 65536 - NETNS_PORT_LOW);
    bc.port = opt_port_pair_default(bc.port, 19300);
    opt_check_port_pair(BENCH_SYNOPSIS, bc.port);
    if (bc.fail_share > 0 && bc.port + 2 > 65535)
        opt_fail(BENCH_SYNOPSIS, "--fail-share: the failing backend takes --port + 2, past 65535");
    opt_check_threads(BENCH_SYNOPSIS, bc.threads, bc.carriers);
    opt_check_users(BENCH_SYNOPSIS, bc.users);
    struct jvm jvm;
    if (bench_setup_jvm(&bc, &jvm))
        return 2;
    return bench_run(&bc);
}

#define MICROBENCH_SYNOPSIS "aggregator microbench [--n N] [--runs R] [--json]"

/* One line per figure with its target beside it. */
static void mb_print_text(const double med[MB_N], int runs)
{
    printf("median of %d runs, one carrier%*s target\n", runs, 42, "");
    for (int i = 0; i < MB_N; i++) {
        const struct mb_figure *f = &mb_figures[i];
        char tgt[64] = "";
        if (i == MB_SWITCH)
            snprintf(tgt, sizeof tgt, "<= %.1f (%.1f x the bare swap)",
                     f->target * med[MB_BASELINE], f->target);
        else if (f->target > 0)
            snprintf(tgt, sizeof tgt, "<= %.0f", f->target);
        printf("  %-66s %10.1f%s%s\n", f->name, med[i], *tgt ? "  " : "", tgt);
    }
}

/* One JSON object: every figure under its field, and how it was measured. */
static void mb_print_json(const double med[MB_N], int runs, long n)
{
    printf("{\"runs\": %d, \"statistic\": \"median\", \"carriers\": 1, \"n\": %ld", runs, n);
    for (int i = 0; i < MB_N; i++)
        printf(", \"%s\": %.1f", mb_figures[i].json, med[i]);
    printf("}\n");
}

static int cmd_microbench(int argc, char **argv)
{
    int n = 1000000, runs = 5, json = 0;
    const struct opt o[] = {
        {"--n", OPT_INT, &n, "iterations of the switch loops; default 1000000"},
        {"--runs", OPT_INT, &runs,
         "in-process runs (at most 16), the median is printed; default 5"},
        {"--json", OPT_FLAG, &json, "one JSON object (fields switch_ns, yield_ns, ...)"},
    };
    opt_parse(MICROBENCH_SYNOPSIS, o, (int)ARRAY_LEN(o), argc, argv);
    if (n < 1000 || runs < 1 || runs > 16)
        opt_fail(MICROBENCH_SYNOPSIS, "need --n >= 1000 and 1 <= --runs <= 16");
    double med[MB_N];
    mb_measure(n, runs, med, NULL, NULL);
    if (json)
        mb_print_json(med, runs, n);
    else
        mb_print_text(med, runs);
    if (!json)
        mb_layers_print(n, runs);
    return 0;
}

#define CALIBRATE_SYNOPSIS                                                                         \
    "aggregator calibrate [--out calibration.ini] [--users N] [--cpu-users N] [--cpu-delay-ms D]"  \
    " [--duration S] [--runs R] [--port P] [--server c|java] [--jit-warmup S]"

/* Parse calibrate's flags; cal_measure does the work. */
static int cmd_calibrate(int argc, char **argv)
{
    struct cal_cfg cfg = {
        .out = "calibration.ini",
        .server = "c",
        .users = 100,
        .cpu_users = 1000,
        .cpu_delay_ms = -1, /* CAL_CPU_DELAY_MS of the server */
        .bench = {.fanout = 1,
                  .delay_ms = 50,
                  .duration_s = 3,
                  .runs = 3,
                  .threads = 200,
                  .port = -1, /* not given: opt_port_pair_default */
                  .jit_warmup_s = BENCH_JIT_WARMUP_S,
                  .on_failure = -1}, /* the K calls in turn: cpu_per_call's fit assumes it */
    };
    const struct opt o[] = {
        {"--out", OPT_STR, &cfg.out, "file to write; default calibration.ini"},
        {"--users", OPT_INT, &cfg.users, "users of the memory runs (light load); default 100"},
        {"--cpu-users", OPT_INT, &cfg.cpu_users,
         "users of the CPU runs (saturated; 4x as many for the cache pressure); default 1000"},
        {"--cpu-delay-ms", OPT_INT, &cfg.cpu_delay_ms,
         "backend delay D of the CPU runs, short to saturate the CPU; default 2 (java: 20)"},
        {"--duration", OPT_DOUBLE, &cfg.bench.duration_s, "seconds per load run; default 3"},
        {"--runs", OPT_INT, &cfg.bench.runs,
         "runs per figure, the median is kept (at most 16); default 3"},
        {"--port", OPT_INT, &cfg.bench.port,
         "backend port (the aggregator uses the next one); default 19400, or the pair below the "
         "ephemeral range where the range holds it"},
        {"--server", OPT_STR, &cfg.server,
         "c (this file) or java (java/Aggregator.java on Tomcat): whose costs; default c"},
        {"--jit-warmup", OPT_DOUBLE, &cfg.bench.jit_warmup_s,
         "java: seconds of load before each window, for the JIT (not counted); default " STR(
             BENCH_JIT_WARMUP_S)},
    };
    opt_parse(CALIBRATE_SYNOPSIS, o, (int)ARRAY_LEN(o), argc, argv);
    cfg.bench.servers = cfg.server;
    if (!bench_servers_valid(cfg.server) || strchr(cfg.server, ',') ||
        !(cfg.bench.jit_warmup_s >= 0))
        opt_fail(CALIBRATE_SYNOPSIS, "--server takes c or java, --jit-warmup a number >= 0");
    if (cfg.cpu_delay_ms == -1)
        cfg.cpu_delay_ms = cal_cpu_delay_ms[cal_server(&cfg.bench)];
    /* the load generator's users, one connection each, within its fds (a CPU run has 4x) */
    long long fds = 0, most = load_max_users(0, &fds);
    long long most_cpu = most / 4 < 2000 ? most / 4 : 2000;
    if (cfg.users < 25 || cfg.users > most || cfg.cpu_users < 1 || cfg.cpu_users > most_cpu ||
        cfg.cpu_delay_ms < 0 || cfg.bench.runs < 1 || cfg.bench.runs > 16 ||
        !(cfg.bench.duration_s > 0))
        opt_fail(CALIBRATE_SYNOPSIS,
                 "need 25 <= --users <= %lld, 1 <= --cpu-users <= %lld (within the load "
                 "generator's %lld fds), --cpu-delay-ms >= 0, 1 <= --runs <= 16, --duration > 0",
                 most, most_cpu, fds);
    cfg.bench.port = opt_port_pair_default(cfg.bench.port, 19400);
    opt_check_port_pair(CALIBRATE_SYNOPSIS, cfg.bench.port);
    struct jvm jvm;
    if (bench_setup_jvm(&cfg.bench, &jvm))
        return 2;
    return cal_measure(&cfg);
}

#define NETNS_SYNOPSIS "aggregator netns [--ports N] [--] COMMAND [ARGS...]"

/* COMMAND in a private network namespace with lo up, N ephemeral ports and tcp_tw_reuse 0,
 * as each cell of bench --netns-ports runs: the port wall by hand, for any program (the JVM
 * server, a test). Exit 3, with one line, where no namespace can be made. */
static int cmd_netns(int argc, char **argv)
{
    int ports = 1000, a = 0;
    if (a < argc && (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h"))) {
        printf("usage: %s\n  --ports N  ephemeral ports %d..%d+N-1; default 1000\n"
               "exit status: COMMAND's, or 3 if no private network namespace can be made\n",
               NETNS_SYNOPSIS, NETNS_PORT_LOW, NETNS_PORT_LOW);
        return 0;
    }
    if (a + 1 < argc && !strcmp(argv[a], "--ports")) {
        char *end;
        long n = strtol(argv[a + 1], &end, 10);
        if (*end || n < 16 || n > 65536 - NETNS_PORT_LOW)
            opt_fail(NETNS_SYNOPSIS, "--ports takes 16 to %d, not '%s'", 65536 - NETNS_PORT_LOW,
                     argv[a + 1]);
        ports = (int)n;
        a += 2;
    }
    if (a < argc && !strcmp(argv[a], "--"))
        a++;
    if (a >= argc)
        opt_fail(NETNS_SYNOPSIS, "no COMMAND to run");
    char why[256];
    if (netns_enter(ports, why, sizeof why) < 0) {
        printf("aggregator netns: skipped: cannot make a private network namespace: %s\n", why);
        return 3;
    }
    signal(SIGPIPE, SIG_DFL); /* agg_main ignores it; COMMAND gets the usual disposition */
    fflush(NULL);
    execvp(argv[a], argv + a);
    die("cannot run %s: %s", argv[a], strerror(errno));
}

/* ---- IV.3 main ---- */

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"serve", cmd_serve, "the aggregator: GET /aggregate, GET /metrics"},
    {"backend", cmd_backend, "the downstream service: GET /item/<i> after D ms"},
    {"load", cmd_load, "load generator: closed-loop users or open-loop rate"},
    {"bench", cmd_bench, "run the grid of users x modes x pooling, write a CSV"},
    {"microbench", cmd_microbench, "switch, park/unpark, create costs; RSS per parked thread"},
    {"calibrate", cmd_calibrate, "measure the simulator's cost parameters, write scenario keys"},
    {"netns", cmd_netns, "a command in a private network namespace with N ephemeral ports"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: aggregator COMMAND [flags]   (COMMAND --help for its flags)\n");
    for (size_t i = 0; i < ARRAY_LEN(commands); i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
}

/* The dispatcher; main only calls it (the tests call it too, with main compiled out). */
static int agg_main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN); /* a peer that closes early is an error code, not a death */
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return out_stdout(0);
    }
    for (size_t i = 0; argc >= 2 && i < ARRAY_LEN(commands); i++)
        if (!strcmp(argv[1], commands[i].name))
            return out_stdout(commands[i].fn(argc - 2, argv + 2));
    if (argc >= 2)
        fprintf(stderr, "aggregator: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
#ifndef AGG_NO_MAIN
int main(int argc, char **argv)
{
    return agg_main(argc, argv);
}
#endif

/* test_aggregator.c: unit and integration tests for aggregator.c (included whole, with its
 * main compiled out). Loads are small and bounded so the run takes seconds, also under ASan;
 * nothing here asserts a timing (timing belongs in `./aggregator bench`). */
#define AGG_NO_MAIN
#include "aggregator.c"
#include "tests/check.h"

/* ---- runtime ---- */

struct counter {
    int n;        /* incremented by the threads under test (one carrier: no race) */
    int order[8]; /* wake-up order for the timer test */
};

static void bump(void *arg)
{
    struct counter *k = arg;
    k->n++;
    vt_yield();
    k->n++;
}

static void t_spawn_join(void *arg)
{
    (void)arg;
    struct counter *k = xcalloc(1, sizeof *k); /* shared with children: on the heap */
    struct vt *v[10];
    for (int i = 0; i < 10; i++) v[i] = vt_spawn(bump, k, 0);
    for (int i = 0; i < 10; i++) vt_join(v[i]);
    CHECK(k->n == 20, "spawn/join: %d increments, want 20", k->n);
    free(k);
}

struct sleeper {
    struct counter *k;
    int id, ms;
};

static void sleeper_main(void *arg)
{
    struct sleeper *s = arg;
    vt_sleep_until(now_ns() + s->ms * NS_PER_MS);
    s->k->order[s->k->n++] = s->id;
}

static void t_timers(void *arg)
{
    (void)arg;
    static const int ms[4] = {40, 10, 30, 20};
    struct counter *k = xcalloc(1, sizeof *k);
    struct sleeper *s = xcalloc(4, sizeof *s);
    struct vt *v[4];
    int64_t t0 = now_ns();
    for (int i = 0; i < 4; i++) {
        s[i] = (struct sleeper){k, i, ms[i]};
        v[i] = vt_spawn(sleeper_main, &s[i], 0);
    }
    for (int i = 0; i < 4; i++) vt_join(v[i]);
    CHECK(k->order[0] == 1 && k->order[1] == 3 && k->order[2] == 2 && k->order[3] == 0,
          "timers woke in order %d %d %d %d, want 1 3 2 0", k->order[0], k->order[1], k->order[2], k->order[3]);
    CHECK(now_ns() - t0 >= 40 * NS_PER_MS, "sleep returned before its deadline");
    free(s);
    free(k);
}

/* park/unpark through epoll: a reader parks on an empty pipe; the writer's byte wakes it. */
struct pipe_pair {
    int fd[2];
    char got;
};

static void pipe_reader(void *arg)
{
    struct pipe_pair *p = arg;
    io_rw(p->fd[0], VT_READ, &p->got, 1, -1);
}

static void t_park_io(void *arg)
{
    (void)arg;
    struct pipe_pair *p = xcalloc(1, sizeof *p);
    if (pipe2(p->fd, O_NONBLOCK | O_CLOEXEC) < 0 || io_register(p->fd[0]) < 0 || io_register(p->fd[1]) < 0) {
        CHECK(0, "pipe: %s", strerror(errno));
        return;
    }
    struct vt *r = vt_spawn(pipe_reader, p, 0);
    vt_yield(); /* the reader runs, finds the pipe empty, parks */
    CHECK(r->state == VT_PARKED, "reader state %d, want parked", r->state);
    CHECK(io_write_all(p->fd[1], "x", 1, -1) == 0, "pipe write");
    vt_join(r);
    CHECK(p->got == 'x', "reader got %d", p->got);
    char c;
    int64_t t0 = now_ns();
    ssize_t n = io_rw(p->fd[0], VT_READ, &c, 1, t0 + 20 * NS_PER_MS);
    CHECK(n < 0 && errno == ETIMEDOUT, "read on an empty pipe with a deadline: %zd, %s", n, strerror(errno));
    io_close(p->fd[0]);
    io_close(p->fd[1]);
    free(p);
}

/* 100,000 virtual threads parked at once (vm.max_map_count is 65530 here). */
#define MANY 100000
struct many {
    struct vt **v;
    long woken;
};

static void many_parker(void *arg)
{
    struct many *m = arg;
    vt_park();
    m->woken++;
}

static void t_many(void *arg)
{
    (void)arg;
    struct many *m = xcalloc(1, sizeof *m);
    m->v = xcalloc(MANY, sizeof *m->v);
    long rss0 = proc_rss_bytes();
    for (int i = 0; i < MANY; i++) m->v[i] = vt_spawn(many_parker, m, 0);
    vt_yield(); /* all of them run once and park */
    struct vt_stats s = vt_stats();
    long rss1 = proc_rss_bytes();
    CHECK(s.parked >= MANY, "parked %ld, want >= %d", s.parked, MANY);
    printf("test_aggregator: %d parked virtual threads, %.0f bytes RSS each\n", MANY, (double)(rss1 - rss0) / MANY);
    for (int i = 0; i < MANY; i++) vt_wake(m->v[i], VT_WOKE_EVENT);
    for (int i = 0; i < MANY; i++) vt_join(m->v[i]);
    CHECK(m->woken == MANY, "woken %ld, want %d", m->woken, MANY);
    free(m->v);
    free(m);
}

/* Stack overflow: a child process recurses on a virtual thread; it must die with the message. */
static int deep(int n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    return n > 0 ? deep(n - 1) + pad[0] : 0;
}

static void overflow_main(void *arg)
{
    (void)arg;
    deep(1 << 20);
}

static void t_overflow(void)
{
    int pfd[2];
    if (pipe(pfd) < 0) return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 2);
        rt_start(1);
        rt_run(overflow_main, NULL);
        _exit(0);
    }
    close(pfd[1]);
    char buf[4096];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof buf - 1 && (n = read(pfd[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
    buf[len] = '\0';
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    CHECK(!(WIFEXITED(st) && WEXITSTATUS(st) == 0), "overflowing child exited normally");
    CHECK(strstr(buf, "virtual thread stack overflow") || strstr(buf, "stack-overflow"),
          "overflow message missing; child said: %.200s", buf);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    int fds0 = proc_count_dir("/proc/self/fd"), tasks0 = proc_count_dir("/proc/self/task");
    rt_start(2);
    rt_run(t_spawn_join, NULL);
    rt_run(t_timers, NULL);
    rt_run(t_park_io, NULL);
    rt_run(t_many, NULL);
    rt_shutdown();
    rt_join();
    CHECK(proc_count_dir("/proc/self/fd") == fds0, "fd leak after the runtime stopped");
    CHECK(proc_count_dir("/proc/self/task") == tasks0, "thread leak after the runtime stopped");
    t_overflow();
    return check_done("test_aggregator");
}

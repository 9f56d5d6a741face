/* test_faults.c: the real ./aggregator, as a separate process, under faults (loopback only).
 *
 * For each mode (platform, virtual) it starts `./aggregator serve` against downstream
 * services that misbehave, and clients that misbehave, and checks that every request gets
 * its status (502 bad answer, 504 timeout), that the server keeps answering others, and that
 * its open fds and threads come back to their baseline afterwards:
 *   - a backend that answers garbage, one that closes half-way through its body, one that
 *     accepts and never answers, one killed mid-run and started again;
 *   - slow clients (a header byte at a time, slowloris style) and clients that disconnect
 *     half-way through a request, while a normal client is served;
 *   - more connections than the server's fd limit allows.
 * Every wait is bounded: sockets have receive timeouts, and the server's own timeouts are
 * short. Usage: tests/test_faults [DIR], DIR holding ./aggregator (default: this binary's ../). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tests/check.h"

static char agg_path[512];

/* ---- processes ---- */

/* Start `./aggregator ARGS...` with `--port 0`; returns its pid and the port it printed. A
 * positive nofile lowers its fd limit first. */
static pid_t spawn(char *const *args, int nofile, int *port)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -1; /* dup2 clears CLOEXEC on the child's stderr */
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 2);
        close(pfd[0]);
        if (nofile > 0)
            setrlimit(RLIMIT_NOFILE, &(struct rlimit){(rlim_t)nofile, (rlim_t)nofile});
        char *argv[32] = {agg_path};
        for (int i = 0; args[i] && i < 30; i++)
            argv[i + 1] = args[i];
        execv(agg_path, argv);
        _exit(127);
    }
    close(pfd[1]);
    char line[256] = "";
    size_t n = 0;
    struct pollfd p = {pfd[0], POLLIN, 0};
    while (n < sizeof line - 1 && !strchr(line, '\n') && poll(&p, 1, 5000) == 1) {
        ssize_t got = read(pfd[0], line + n, sizeof line - 1 - n);
        if (got <= 0)
            break;
        line[n += (size_t)got] = 0;
    }
    close(pfd[0]); /* later messages go to a closed pipe: the server ignores SIGPIPE */
    char *colon = strstr(line, "127.0.0.1:");
    *port = colon ? atoi(colon + 10) : 0;
    if (!*port) {
        fprintf(stderr, "test_faults: %s did not start: %s\n", args[0], line);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

static int stop(pid_t pid)
{
    int status = 0;
    if (pid <= 0)
        return -1;
    kill(pid, SIGTERM);
    for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; i++)
        usleep(10000); /* bounded: 5 s */
    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    return status;
}

static int count_fds(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return d ? n : -1;
}

static int count_threads(pid_t pid)
{
    char path[64], line[128];
    int n = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Threads:", 8))
            n = atoi(line + 8);
    if (f)
        fclose(f);
    return n;
}

/* ---- sockets ---- */

/* Connect within `ms` (a full backlog drops SYNs: connect() would wait for seconds). */
static int dial_within(int port, int ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {5, 0};
    if (fd < 0)
        return -1;
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a), err = 0;
    socklen_t len = sizeof err;
    struct pollfd p = {fd, POLLOUT, 0};
    if (rc < 0 && (errno != EINPROGRESS || poll(&p, 1, ms) != 1 ||
                   getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err)) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static int dial(int port)
{
    return dial_within(port, 2000);
}

/* One request on a new connection; the answer's status, or -1 (no answer in 5 s). */
static int get(int port, const char *path)
{
    int fd = dial(port), status = -1;
    char req[256], buf[256];
    if (fd < 0)
        return -1;
    int n =
        snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path);
    ssize_t got;
    if (write(fd, req, (size_t)n) == n && (got = read(fd, buf, sizeof buf - 1)) > 12) {
        buf[got] = 0;
        if (!strncmp(buf, "HTTP/1.1 ", 9))
            status = atoi(buf + 9);
    }
    close(fd);
    return status;
}

/* A listening socket on an ephemeral loopback port. */
static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

/* ---- misbehaving backends, each a thread serving until its socket is shut down ---- */

enum fake_kind { FAKE_GARBAGE, FAKE_HALF, FAKE_SILENT };
struct fake {
    int lfd, port, kind;
    pthread_t th;
    int held[64], nheld; /* FAKE_SILENT: connections kept open, never answered */
};

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    static const char garbage[] = "this is not HTTP\r\n\r\n";
    static const char half[] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"item\": ";
    for (int c; (c = accept(f->lfd, NULL, NULL)) >= 0;) {
        char buf[1024];
        if (read(c, buf, sizeof buf) <= 0) {
            close(c);
            continue;
        }
        if (f->kind == FAKE_SILENT && f->nheld < 64) {
            f->held[f->nheld++] = c;
            continue;
        }
        const char *out = f->kind == FAKE_GARBAGE ? garbage : half;
        if (write(c, out, strlen(out)) < 0) {
        }
        close(c);
    }
    return NULL;
}

static int fake_start(struct fake *f, int kind)
{
    memset(f, 0, sizeof *f);
    f->kind = kind;
    if ((f->lfd = listen_any(&f->port)) < 0)
        return -1;
    return pthread_create(&f->th, NULL, fake_main, f);
}

static void fake_stop(struct fake *f)
{
    shutdown(f->lfd, SHUT_RDWR); /* accept() returns an error: the thread ends */
    pthread_join(f->th, NULL);
    close(f->lfd);
    for (int i = 0; i < f->nheld; i++)
        close(f->held[i]);
}

/* ---- the tests ---- */

static const char *const modes[] = {"platform", "virtual"};

/* A fresh aggregator in `mode` against `backend`; baseline fds and threads measured after a
 * first request has warmed it up. */
struct server {
    pid_t pid;
    int port, fds0, threads0;
};

static int server_start(struct server *s, const char *mode, int backend, int nofile, int healthy)
{
    char b[32];
    snprintf(b, sizeof b, "127.0.0.1:%d", backend);
    char *args[] = {"serve", "--mode",       (char *)mode, "--port",    "0",   "--backends",
                    b,       "--timeout-ms", "300",        "--idle-ms", "500", "--threads",
                    "8",     "--min-spare",  "8",          NULL};
    s->pid = spawn(args, nofile, &s->port);
    if (s->pid < 0)
        return -1;
    /* with a healthy backend, warm up: each carrier keeps its own pooled downstream
     * connection, and connections are spread over the carriers round-robin */
    for (int i = 0; i < 4; i++)
        get(s->port, healthy ? "/aggregate" : "/metrics");
    s->fds0 = count_fds(s->pid), s->threads0 = count_threads(s->pid);
    return 0;
}

/* After a test: its fds and threads back to the baseline (allowing the server a moment to
 * close what its timeouts close), it still answers, and it stops cleanly. */
static void server_check_and_stop(struct server *s, const char *what)
{
    int fds = -1, threads = -1;
    for (int i = 0; i < 300; i++) { /* bounded: 3 s */
        fds = count_fds(s->pid), threads = count_threads(s->pid);
        if (fds <= s->fds0 && threads <= s->threads0)
            break;
        usleep(10000);
    }
    CHECK(fds <= s->fds0, "%s: %d fds open after, %d before", what, fds, s->fds0);
    CHECK(threads <= s->threads0, "%s: %d threads after, %d before", what, threads, s->threads0);
    CHECK(get(s->port, "/metrics") == 200, "%s: the server still answers", what);
    int status = stop(s->pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: stops cleanly on SIGTERM (status %d)",
          what, status);
}

static void test_bad_backends(const char *mode)
{
    static const struct {
        int kind, want;
        const char *name;
    } cases[] = {{FAKE_GARBAGE, 502, "garbage answer"},
                 {FAKE_HALF, 502, "closed half-way"},
                 {FAKE_SILENT, 504, "never answers"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fake f;
        struct server s;
        char what[96];
        snprintf(what, sizeof what, "%s, a backend that %s", mode, cases[i].name);
        if (fake_start(&f, cases[i].kind) < 0 || server_start(&s, mode, f.port, 0, 0) < 0) {
            CHECK(0, "%s: setup", what);
            continue;
        }
        int got[4];
        for (int k = 0; k < 4; k++)
            got[k] = get(s.port, "/aggregate");
        CHECK(got[0] == cases[i].want && got[3] == cases[i].want, "%s: want %d, got %d and %d",
              what, cases[i].want, got[0], got[3]);
        fake_stop(&f);
        server_check_and_stop(&s, what);
    }
}

/* A healthy backend (D = 5 ms) and an aggregator in `mode` on it; 0, or -1 after a CHECK. */
static int setup_healthy(const char *mode, int nofile, const char *what, pid_t *be, int *bport,
                         struct server *s)
{
    char *bargs[] = {"backend", "--port", "0", "--delay-ms", "5", NULL};
    *be = spawn(bargs, 0, bport);
    if (*be >= 0 && server_start(s, mode, *bport, nofile, 1) == 0)
        return 0;
    CHECK(0, "%s: setup", what);
    if (*be >= 0)
        stop(*be);
    return -1;
}

static void test_backend_killed(const char *mode)
{
    char what[64];
    snprintf(what, sizeof what, "%s, backend killed and restarted", mode);
    int bport, again;
    pid_t be;
    struct server s;
    if (setup_healthy(mode, 0, what, &be, &bport, &s) < 0)
        return;
    CHECK(get(s.port, "/aggregate") == 200, "%s: 200 while it runs", what);
    kill(be, SIGKILL);
    waitpid(be, NULL, 0);
    int down = get(s.port, "/aggregate");
    CHECK(down == 502, "%s: 502 while it is down (got %d)", what, down);
    char p[16];
    snprintf(p, sizeof p, "%d", bport);
    char *rargs[] = {"backend", "--port", p, "--delay-ms", "5", NULL};
    be = spawn(rargs, 0, &again);
    int up = -1;
    for (int i = 0; i < 20 && up != 200; i++)
        up = get(s.port, "/aggregate"); /* stale pooled connections fail first */
    CHECK(be > 0 && up == 200, "%s: 200 again once it is back (got %d)", what, up);
    server_check_and_stop(&s, what);
    stop(be);
}

/* Slow and vanishing clients must not starve a normal one, and are closed by the server. */
static void test_bad_clients(const char *mode)
{
    char what[64];
    snprintf(what, sizeof what, "%s, slow and vanishing clients", mode);
    int bport;
    pid_t be;
    struct server s;
    if (setup_healthy(mode, 0, what, &be, &bport, &s) < 0)
        return;
    enum { SLOW = 40 };
    int slow[SLOW];
    for (int i = 0; i < SLOW; i++) { /* more slow clients than platform threads (8) */
        slow[i] = dial(s.port);
        if (slow[i] >= 0 && write(slow[i], "GET /aggr", 9) < 0) {
        }
    }
    for (int i = 0; i < 50; i++) { /* clients that hang up half-way through their request */
        int fd = dial(s.port);
        if (fd >= 0 && write(fd, "GET /aggregate HTTP/1.1\r\nHo", 27) < 0) {
        }
        if (fd >= 0)
            close(fd);
    }
    for (int i = 0; i < 3; i++) /* one byte more each: still incomplete */
        for (int k = 0; k < SLOW; k++)
            if (slow[k] >= 0 && write(slow[k], "a", 1) < 0) {
            }
    CHECK(get(s.port, "/aggregate") == 200, "%s: a normal client is served meanwhile", what);
    int closed = 0;
    for (int k = 0; k < SLOW; k++) { /* the server's idle timeout (500 ms) closes them */
        char c;
        struct pollfd p = {slow[k], POLLIN, 0};
        if (slow[k] >= 0 && poll(&p, 1, 3000) == 1 && read(slow[k], &c, 1) <= 0)
            closed++;
        if (slow[k] >= 0)
            close(slow[k]);
    }
    CHECK(closed == SLOW, "%s: %d of %d slow clients closed by the server's timeout", what, closed,
          SLOW);
    server_check_and_stop(&s, what);
    stop(be);
}

/* A server limited to 64 fds, offered 200 connections: the extra ones are refused or closed,
 * and once they go, it serves again. */
static void test_fd_limit(const char *mode)
{
    char what[64];
    snprintf(what, sizeof what, "%s, more connections than fds", mode);
    int bport;
    pid_t be;
    struct server s;
    if (setup_healthy(mode, 64, what, &be, &bport, &s) < 0)
        return;
    enum { MANY = 200 };
    int fds[MANY], open_now = 0;
    for (int i = 0; i < MANY; i++)
        fds[i] = dial_within(s.port, 100);
    for (int i = 0; i < MANY; i++)
        open_now += fds[i] >= 0;
    CHECK(kill(s.pid, 0) == 0 && open_now > 0,
          "%s: the server lives through EMFILE (%d connections made)", what, open_now);
    for (int i = 0; i < MANY; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    int ok = -1;
    for (int i = 0; i < 50 && ok != 200; i++)
        ok = get(s.port, "/aggregate");
    CHECK(ok == 200, "%s: serves again after %d connections went (got %d)", what, open_now, ok);
    server_check_and_stop(&s, what);
    stop(be);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    char self[512];
    snprintf(self, sizeof self, "%s", argv[0]);
    snprintf(agg_path, sizeof agg_path, "%s/aggregator",
             argc > 1 ? argv[1] : dirname(dirname(self)));
    if (access(agg_path, X_OK) < 0) {
        fprintf(stderr, "test_faults: no %s (make aggregator)\n", agg_path);
        return check_done("test_faults") | 1;
    }
    for (int m = 0; m < 2; m++) {
        test_bad_backends(modes[m]);
        test_backend_killed(modes[m]);
        test_bad_clients(modes[m]);
        test_fd_limit(modes[m]);
    }
    return check_done("test_faults");
}

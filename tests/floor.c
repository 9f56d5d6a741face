/* tests/floor.c: the leanest aggregator we can write, to measure the kernel's floor of CPU
 * per request on a machine; `make bench` runs it beside ./aggregator.
 * It serves what `./aggregator serve` serves for GET /aggregate: K downstream calls GET
 * /item/0 .. /item/K-1 over keep-alive connections to one backend, answered with the K
 * bodies as a JSON array, the calls one after the other (or all at once with ?parallel=1).
 * It has no runtime at all: one thread per core, each an edge-triggered epoll loop over
 * per-connection state machines (a callback per connection), each with its own listener
 * (SO_REUSEPORT: the kernel spreads the connections) and its own pool of downstream
 * connections, so no lock, no hand-off between threads and no wake-up but the kernel's.
 * The gap between this and the aggregator's virtual mode is what our runtime costs; what
 * this costs is the kernel's loopback TCP and epoll, i.e. physics here.
 *
 *   make tests/floor
 *   tests/floor --port 9101 --backend 127.0.0.1:9100 [--threads 2] [--fanout 3] [--coalesce-us 0]
 *   (--port 0: any free port, printed on stderr as ./aggregator serve does)
 *
 * Syscalls. Every socket is registered once, for EPOLLIN | EPOLLOUT | EPOLLRDHUP, edge
 * triggered, and never modified: TCP reports EPOLLOUT only after a write found the send
 * buffer full, so the registration costs nothing per request. A read that returns less than
 * it asked for proves the socket drained (the next byte to arrive raises a new edge), so we
 * never read again to see EAGAIN; a write of a whole message is done. So one request with K
 * sequential calls costs 1 read + 1 write on the client connection, 1 write + 1 read per
 * downstream call, and a share of epoll_wait: 2 + 2K syscalls (8 at K = 3) plus
 * epoll_wait / requests (perf stat's syscall tracepoints count them; README has the counts
 * and the CPU per request beside ./aggregator's, measured under wrk).
 *
 * Deliberately left out (this is a measuring instrument, not a server to deploy): timeouts
 * (a backend that never answers holds its client forever), closing idle pooled connections
 * (the pool grows to the peak concurrency and stays), the stale-connection peek before reuse
 * (./aggregator's MSG_PEEK; here a reused connection that turns out closed is retried once
 * on a fresh one instead), chunked bodies in either direction.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
    MAX_FANOUT = 16, /* K at most */
    REQ_BUF = 8192,  /* one client request, head and body (400 beyond) */
    DS_BUF = 4096,   /* one downstream response, head and body (502 beyond) */
    BODY_MAX = 1024, /* one downstream body (502 beyond) */
    EVENTS = 256,    /* events per epoll_wait */
    MAX_THREADS = 64,
};

/* ---- configuration ---- */

static struct {
    int port;                   /* listen on 127.0.0.1:port */
    struct sockaddr_in backend; /* where /item/<i> is asked */
    int threads;                /* event loops, one per core by default */
    int fanout;                 /* K */
    int coalesce_us;            /* sleep this long after each batch of events (0: never) */
} cfg = {.port = 0, .threads = 0, .fanout = 3};

static void die(const char *what)
{
    fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "floor: out of memory\n");
        abort();
    }
    return p;
}

/* ---- connections and their state machines ---- */

struct worker;

/* What epoll's data.ptr points at: the first member of every connection and the listener,
 * so one indirect call dispatches an event to its state machine. */
struct handler {
    void (*on_event)(struct worker *w, struct handler *h, uint32_t events);
};

struct client;

/* One downstream call of a client's request. */
struct call {
    struct client *c;
    struct ds *ds; /* the connection carrying it, NULL when done */
    int item;      /* /item/<item> */
    int status;    /* 200 or 502; 0 while in flight */
    int retried;   /* a stale pooled connection was replaced once already */
    size_t len;
    char body[BODY_MAX];
};

/* A downstream keep-alive connection: one request in flight at most. */
struct ds {
    struct handler h;
    int fd;
    int connecting;         /* connect() returned EINPROGRESS and no EPOLLOUT has come yet */
    int reused;             /* taken from the pool: EOF before any byte means it went stale */
    int pooled;             /* on the worker's idle list */
    struct call *call;      /* the call it carries; NULL when idle or when its client left */
    struct ds *prev, *next; /* idle list links */
    size_t len;             /* bytes in buf */
    char buf[DS_BUF];
};

/* A client connection: reads a request, runs its calls, writes the answer, repeats. */
struct client {
    struct handler h;
    int fd;
    int busy;       /* a request is being served: its calls or its answer are pending */
    int readable;   /* the socket may hold unread bytes (no short read since the last edge) */
    int keep;       /* keep-alive after this answer */
    int parallel;   /* ?parallel=1: all calls at once */
    int next_call;  /* sequential: the next call to start */
    int pending;    /* calls in flight */
    int starting;   /* client_serve is starting calls: one that fails at once must not
                       answer (and maybe close c) under its feet */
    size_t len;     /* bytes in in */
    size_t req_len; /* bytes of the request being served (consumed when answered) */
    char *out;      /* the answer, written from out_off */
    size_t out_len, out_off, out_cap;
    struct call calls[MAX_FANOUT];
    char in[REQ_BUF];
};

/* One event loop: its epoll, its listener, its idle downstream connections. */
struct worker {
    int ep;
    int lfd;
    struct handler listen;
    struct ds *idle; /* LIFO: the warmest connection first */
    pthread_t tid;
};

static void on_client(struct worker *w, struct handler *h, uint32_t events);
static void on_ds(struct worker *w, struct handler *h, uint32_t events);
static void client_next(struct worker *w, struct client *c);
static void client_reply(struct worker *w, struct client *c);
static void call_start(struct worker *w, struct call *call);

/* Register fd for every event we will ever want, once (see the syscall note above). */
static int watch(struct worker *w, int fd, struct handler *h)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = h};
    return epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* ---- minimal HTTP: request line, header lookup, Content-Length ---- */

/* The value of header `name` in the head [p, end) (lines after the first), or NULL. */
static const char *head_value(const char *p, const char *end, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);
    const char *line = memchr(p, '\n', (size_t)(end - p));
    while (line && ++line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            break;
        if ((size_t)(eol - line) > nl && line[nl] == ':' && !strncasecmp(line, name, nl)) {
            const char *v = line + nl + 1, *ve = eol;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            *vlen = (size_t)(ve - v);
            return v;
        }
        line = eol;
    }
    return NULL;
}

static int value_has(const char *v, size_t n, const char *tok)
{
    size_t tl = strlen(tok);
    for (size_t i = 0; v && i + tl <= n; i++)
        if (!strncasecmp(v + i, tok, tl))
            return 1;
    return 0;
}

/* Content-Length of the head, 0 if absent, -1 if malformed. */
static long head_length(const char *p, const char *end)
{
    size_t n;
    const char *v = head_value(p, end, "content-length", &n);
    long len = 0;
    if (!v)
        return 0;
    if (!n || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        len = len * 10 + (v[i] - '0');
    }
    return len;
}

/* Bytes of the whole message (head + Content-Length body) at buf, 0 if incomplete, -1 if
 * malformed or larger than max. */
static long message_len(const char *buf, size_t len, size_t max, size_t *head_out)
{
    const char *e = memmem(buf, len, "\r\n\r\n", 4);
    if (!e)
        return len >= max ? -1 : 0;
    size_t head = (size_t)(e - buf) + 4;
    long body = head_length(buf, e + 2);
    if (body < 0 || head + (size_t)body > max)
        return -1;
    *head_out = head;
    return len >= head + (size_t)body ? (long)(head + (size_t)body) : 0;
}

/* ---- the answer ---- */

static void out_reserve(struct client *c, size_t n)
{
    if (c->out_cap >= n)
        return;
    c->out = realloc(c->out, n);
    if (!c->out) {
        fprintf(stderr, "floor: out of memory\n");
        abort();
    }
    c->out_cap = n;
}

/* The status line and headers of an answer with an n-byte body into c->out, in
 * ./aggregator's exact shape (http_write_response), by memcpy (snprintf cost ~1 us per
 * answer here). Returns where the body goes. Only the statuses in the table are used. */
static char *put(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static char *put_ulong(char *p, size_t v)
{
    char d[24], *e = d + sizeof d, *b = e;
    do
        *--b = (char)('0' + v % 10);
    while (v /= 10);
    memcpy(p, b, (size_t)(e - b));
    return p + (e - b);
}

static char *answer_head(struct client *c, int status, const char *ctype, size_t n)
{
    static const struct {
        int code;
        const char *line; /* status line, CRLF included */
    } statuses[] = {
        {200, "HTTP/1.1 200 OK\r\n"},          {400, "HTTP/1.1 400 Bad Request\r\n"},
        {404, "HTTP/1.1 404 Not Found\r\n"},   {405, "HTTP/1.1 405 Method Not Allowed\r\n"},
        {502, "HTTP/1.1 502 Bad Gateway\r\n"},
    };
    const char *line = statuses[0].line;
    for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
        if (statuses[i].code == status)
            line = statuses[i].line;
    out_reserve(c, n + 256); /* the longest head is under 160 bytes */
    char *p = put(c->out, line);
    p = put(p, "Content-Type: ");
    p = put(p, ctype);
    p = put(p, "\r\nContent-Length: ");
    p = put_ulong(p, n);
    p = put(p, c->keep ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
    c->out_len = (size_t)(p - c->out) + n;
    c->out_off = 0;
    return p;
}

static void answer_text(struct client *c, int status, const char *text)
{
    size_t n = strlen(text);
    memcpy(answer_head(c, status, "text/plain", n), text, n);
}

/* The JSON array of the K bodies, or 502 if any call failed (the first failure decides, as
 * in ./aggregator; a sequential request stops at it). */
static void answer_calls(struct client *c)
{
    size_t n = 1 + (size_t)cfg.fanout; /* brackets and commas */
    for (int i = 0; i < cfg.fanout; i++) {
        if (c->calls[i].status != 200) {
            answer_text(c, 502, "Bad Gateway");
            return;
        }
        n += c->calls[i].len;
    }
    char *p = answer_head(c, 200, "application/json", n);
    *p++ = '[';
    for (int i = 0; i < cfg.fanout; i++) {
        if (i)
            *p++ = ',';
        memcpy(p, c->calls[i].body, c->calls[i].len);
        p += c->calls[i].len;
    }
    *p = ']';
}

/* ---- client connections ---- */

static void client_close(struct client *c)
{
    for (int i = 0; i < cfg.fanout; i++)
        if (c->calls[i].ds)
            c->calls[i].ds->call = NULL; /* orphaned: its answer is read and dropped */
    close(c->fd);                        /* also leaves the epoll set */
    free(c->out);
    free(c);
}

/* Write the answer. A short write means the send buffer is full (TCP then raises EPOLLOUT
 * when it drains), so the rest waits for that edge instead of a write that would only say
 * EAGAIN. Returns 0 when all is written, 1 when waiting, -1 if c is closed. */
static int client_flush(struct client *c)
{
    size_t want = c->out_len - c->out_off;
    ssize_t n = want ? write(c->fd, c->out + c->out_off, want) : 0;
    if (n < 0 && errno == EAGAIN)
        return 1;
    if (n < 0 || (n == 0 && want)) {
        client_close(c);
        return -1;
    }
    c->out_off += (size_t)n;
    return c->out_off < c->out_len;
}

/* The answer is in c->out: write it and finish the request. Returns 0 when c is ready for
 * its next request, 1 while the answer waits for EPOLLOUT, -1 if c is closed. */
static int client_done(struct client *c)
{
    int r = client_flush(c);
    if (r != 0)
        return r;
    if (!c->keep) {
        client_close(c);
        return -1;
    }
    c->len -= c->req_len;
    memmove(c->in, c->in + c->req_len, c->len); /* pipelined bytes, rarely any */
    c->req_len = 0;
    c->busy = 0;
    return 0;
}

/* The answer of a request whose calls are done (or whose EPOLLOUT came): send it, then go on
 * with the next request. */
static void client_reply(struct worker *w, struct client *c)
{
    if (client_done(c) == 0)
        client_next(w, c);
}

/* Route the complete request of req_len bytes at c->in (head bytes of it). Returns what
 * client_done does, or 1 when calls are under way. */
static int client_serve(struct worker *w, struct client *c, size_t head)
{
    const char *p = c->in, *eol = memchr(p, '\r', head), *end = p + head - 2;
    const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    size_t vlen = 0;
    const char *conn = head_value(p, end, "connection", &vlen);
    c->busy = 1;
    if (!sp2 || eol - sp2 != 9 || memcmp(sp2 + 1, "HTTP/1.", 7)) {
        c->keep = 0;
        answer_text(c, 400, "Bad Request");
    } else {
        int minor = sp2[8] - '0';
        c->keep =
            minor == 1 ? !value_has(conn, vlen, "close") : value_has(conn, vlen, "keep-alive");
        const char *path = sp1 + 1, *q = memchr(path, '?', (size_t)(sp2 - path));
        size_t plen = (size_t)((q ? q : sp2) - path);
        if (sp1 - p != 3 || memcmp(p, "GET", 3)) {
            answer_text(c, 405, "Method Not Allowed");
        } else if (plen != 10 || memcmp(path, "/aggregate", 10)) {
            answer_text(c, 404, "Not Found");
        } else {
            c->parallel = q && memmem(q, (size_t)(sp2 - q), "parallel=1", 10);
            c->next_call = 0;
            c->pending = 0;
            for (int i = 0; i < cfg.fanout; i++) { /* fields, not a compound literal: that
                                                     would also zero the 1 KiB bodies */
                struct call *call = &c->calls[i];
                call->c = c;
                call->ds = NULL;
                call->item = i;
                call->status = call->retried = 0;
                call->len = 0;
            }
            /* counted before any starts: a call failing at once must not see pending 0
             * (and answer) while its siblings are still to start */
            int n = c->pending = c->parallel ? cfg.fanout : 1;
            c->starting = 1;
            for (int i = 0; i < n; i++)
                call_start(w, &c->calls[c->next_call++]);
            c->starting = 0;
            if (c->pending)
                return 1; /* answered when the last call is done */
        }
    }
    return client_done(c);
}

/* Read and serve requests until one is in progress or the socket has nothing more. Reads
 * only while the last read filled its buffer (no short read yet since the edge). */
static void client_next(struct worker *w, struct client *c)
{
    while (!c->busy) {
        size_t head = 0;
        long r = message_len(c->in, c->len, REQ_BUF, &head);
        if (r > 0) {
            c->req_len = (size_t)r;
            if (client_serve(w, c, head) < 0)
                return; /* closed */
            continue;   /* busy ends the loop; an answer written at once does not */
        }
        if (r < 0) {
            c->keep = 0;
            c->busy = 1;
            answer_text(c, 400, "Bad Request");
            client_done(c); /* closes c */
            return;
        }
        if (!c->readable)
            return; /* wait for the next edge */
        size_t space = REQ_BUF - c->len;
        ssize_t n = read(c->fd, c->in + c->len, space);
        if (n < 0 && errno == EAGAIN) {
            c->readable = 0;
            return;
        }
        if (n <= 0) {
            client_close(c);
            return;
        }
        c->len += (size_t)n;
        c->readable = (size_t)n == space; /* a short read drained the socket */
    }
}

static void on_client(struct worker *w, struct handler *h, uint32_t events)
{
    struct client *c = (struct client *)h;
    if (events & (EPOLLERR | EPOLLHUP)) {
        client_close(c);
        return;
    }
    if (events & (EPOLLIN | EPOLLRDHUP))
        c->readable = 1; /* read now if idle, else after the answer */
    if (c->busy) {
        if ((events & EPOLLOUT) && c->out_off < c->out_len)
            client_reply(w, c);
        return;
    }
    client_next(w, c);
}

static void on_listen(struct worker *w, struct handler *h, uint32_t events)
{
    (void)h;
    (void)events;
    for (;;) { /* connections are rare: drain to EAGAIN */
        int fd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR)
                perror("floor: accept4"); /* EMFILE and the like: keep serving the others */
            return;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* as ./aggregator */
        struct client *c = xcalloc(1, sizeof *c);
        c->h.on_event = on_client;
        c->fd = fd;
        if (watch(w, fd, &c->h) < 0) {
            close(fd);
            free(c);
        }
    }
}

/* ---- downstream connections and calls ---- */

static void pool_unlink(struct worker *w, struct ds *d)
{
    if (d->prev)
        d->prev->next = d->next;
    else
        w->idle = d->next;
    if (d->next)
        d->next->prev = d->prev;
    d->prev = d->next = NULL;
    d->pooled = 0;
}

static void pool_put(struct worker *w, struct ds *d)
{
    d->call = NULL;
    d->pooled = 1;
    d->prev = NULL;
    d->next = w->idle;
    if (w->idle)
        w->idle->prev = d;
    w->idle = d;
}

static void ds_close(struct worker *w, struct ds *d)
{
    if (d->pooled)
        pool_unlink(w, d);
    close(d->fd);
    free(d);
}

static struct ds *ds_open(struct worker *w)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return NULL;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct ds *d = xcalloc(1, sizeof *d);
    d->h.on_event = on_ds;
    d->fd = fd;
    int r = connect(fd, (struct sockaddr *)&cfg.backend, sizeof cfg.backend);
    d->connecting = r < 0 && errno == EINPROGRESS;
    if ((r < 0 && !d->connecting) || watch(w, fd, &d->h) < 0) {
        close(fd);
        free(d);
        return NULL;
    }
    return d;
}

/* The downstream requests, GET /item/<i> for i < K, as ./aggregator's ds_call writes them;
 * made once at start. */
static char ds_requests[MAX_FANOUT][64];

static void ds_requests_init(void)
{
    for (int i = 0; i < cfg.fanout; i++)
        snprintf(ds_requests[i], sizeof ds_requests[i],
                 "GET /item/%d HTTP/1.1\r\nHost: backend\r\n\r\n", i);
}

/* A call is over (status set): start the next one, or answer when none is in flight. A
 * sequential request stops at its first failure. */
static void call_done(struct worker *w, struct call *call)
{
    struct client *c = call->c;
    call->ds = NULL;
    if (!c->parallel && call->status == 200 && c->next_call < cfg.fanout) {
        call_start(w, &c->calls[c->next_call++]); /* pending stays 1 */
        return;
    }
    if (--c->pending)
        return;
    answer_calls(c);
    if (!c->starting) /* else client_serve sends it, once its loop is over */
        client_reply(w, c);
}

static void call_fail(struct worker *w, struct call *call)
{
    call->status = 502;
    call_done(w, call);
}

/* A pooled connection turned out closed by the backend before answering: retry once on a
 * fresh connection (what ./aggregator's ds_call does after its MSG_PEEK missed it). */
static void call_stale(struct worker *w, struct call *call)
{
    call->ds = NULL;
    if (call->retried++)
        call_fail(w, call);
    else
        call_start(w, call);
}

/* Send the call's request on its connection: one write, always whole (a 40-byte request
 * into an idle connection's empty send buffer). */
static void ds_send(struct worker *w, struct ds *d)
{
    const char *req = ds_requests[d->call->item];
    ssize_t n = (ssize_t)strlen(req);
    if (write(d->fd, req, (size_t)n) == n)
        return;
    struct call *call = d->call;
    int stale = d->reused && (errno == EPIPE || errno == ECONNRESET);
    ds_close(w, d);
    if (stale)
        call_stale(w, call);
    else
        call_fail(w, call);
}

/* Run `call` on the warmest idle connection, or on a new one when none is idle (or when a
 * pooled one just failed it). The caller has counted it in c->pending. */
static void call_start(struct worker *w, struct call *call)
{
    struct ds *d = call->retried ? NULL : w->idle;
    int reused = d != NULL;
    if (d)
        pool_unlink(w, d);
    else if (!(d = ds_open(w))) {
        call_fail(w, call);
        return;
    }
    d->reused = reused;
    d->call = call;
    call->ds = d;
    if (!d->connecting)
        ds_send(w, d);
}

/* A whole response is in d->buf (r bytes, head bytes of head): hand the body to the call. */
static void ds_deliver(struct worker *w, struct ds *d, size_t r, size_t head)
{
    struct call *call = d->call;
    const char *end = d->buf + head - 2;
    size_t vlen = 0, body = r - head;
    const char *conn = head_value(d->buf, end, "connection", &vlen);
    int keep = d->len == r && !value_has(conn, vlen, "close"); /* nothing past the answer */
    int ok = d->len >= 12 && !memcmp(d->buf + 8, " 200", 4) && body <= BODY_MAX;
    if (call) {
        call->status = ok ? 200 : 502;
        if (ok)
            memcpy(call->body, d->buf + head, call->len = body);
    }
    d->len = 0;
    if (keep)
        pool_put(w, d);
    else
        ds_close(w, d);
    if (call)
        call_done(w, call);
}

/* The connection failed, closed, or sent what nobody asked for. A reused one that closed
 * before any byte of its answer went stale in the pool: its call is retried. */
static void ds_broken(struct worker *w, struct ds *d)
{
    struct call *call = d->call;
    int stale = d->reused && d->len == 0;
    ds_close(w, d);
    if (call && stale)
        call_stale(w, call);
    else if (call)
        call_fail(w, call);
}

/* Read the answer: one read per edge unless it filled the buffer. */
static void ds_read(struct worker *w, struct ds *d)
{
    for (;;) {
        size_t space = DS_BUF - d->len;
        ssize_t n = read(d->fd, d->buf + d->len, space);
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0 || (!d->call && d->pooled)) { /* EOF, error, or bytes nobody asked for */
            ds_broken(w, d);
            return;
        }
        d->len += (size_t)n;
        size_t head = 0;
        long r = message_len(d->buf, d->len, DS_BUF, &head);
        if (r > 0) {
            ds_deliver(w, d, (size_t)r, head);
            return;
        }
        if (r < 0) {
            ds_broken(w, d);
            return;
        }
        if ((size_t)n < space)
            return; /* drained: wait for the rest's edge */
    }
}

static void on_ds(struct worker *w, struct handler *h, uint32_t events)
{
    struct ds *d = (struct ds *)h;
    if (d->connecting) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        d->connecting = 0; /* the write below reports a failed connect */
        if (d->call) {
            ds_send(w, d);
            return;
        }
        pool_put(w, d); /* its client left while it connected */
        return;
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP))
        ds_read(w, d);
}

/* ---- event loops ---- */

/* A listener on 127.0.0.1:port (loopback only), one per worker: with SO_REUSEPORT the
 * kernel hashes each new connection to one of them. reuseport_group says whether to join
 * the group; without it the bind only checks that the port is free (a second floor would
 * otherwise join the first one's group and silently take half its connections). */
static int listen_on(int port, int reuseport_group)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        (reuseport_group && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        (reuseport_group && listen(fd, SOMAXCONN) < 0))
        die("listen on 127.0.0.1 --port");
    return fd;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event ev[EVENTS];
    struct timespec pause = {.tv_nsec = (long)cfg.coalesce_us * 1000};
    for (;;) {
        int n = epoll_wait(w->ep, ev, EVENTS, -1);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            struct handler *h = ev[i].data.ptr;
            h->on_event(w, h, ev[i].events);
        }
        /* --coalesce-us: interrupt coalescing in user space. Events arriving in the pause
         * are taken by the next epoll_wait at once, so under load the thread sleeps and wakes
         * at most once per pause instead of once per burst, for up to that much latency. */
        if (cfg.coalesce_us && n < EVENTS)
            nanosleep(&pause, NULL);
    }
    return NULL;
}

static void worker_init(struct worker *w)
{
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    if (w->ep < 0)
        die("epoll_create1");
    w->lfd = listen_on(cfg.port, 1);
    if (!cfg.port) { /* --port 0: the first listener's port, for the others and the log */
        struct sockaddr_in sa;
        socklen_t len = sizeof sa;
        if (getsockname(w->lfd, (struct sockaddr *)&sa, &len) < 0)
            die("getsockname");
        cfg.port = ntohs(sa.sin_port);
    }
    w->listen.on_event = on_listen;
    if (watch(w, w->lfd, &w->listen) < 0)
        die("epoll_ctl");
}

/* ---- command line ---- */

static void usage(void)
{
    fprintf(stderr,
            "usage: floor --port P (0: any) --backend HOST:PORT [--threads N] [--fanout K] "
            "[--coalesce-us U]\n"
            "  --threads  event loops (default: one per online core)\n"
            "  --fanout   downstream calls per /aggregate, 1..%d (default 3)\n"
            "  --coalesce-us  sleep after each batch of events, 0..999999 (default 0: never)\n",
            MAX_FANOUT);
    exit(2);
}

static int parse_int(const char *s, int lo, int hi, const char *flag)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "floor: %s wants an integer in %d..%d, got '%s'\n", flag, lo, hi,
                s ? s : "");
        exit(2);
    }
    return (int)v;
}

static void parse_backend(const char *s)
{
    char host[64];
    const char *colon = s ? strrchr(s, ':') : NULL;
    if (!colon || (size_t)(colon - s) >= sizeof host) {
        fprintf(stderr, "floor: --backend wants HOST:PORT, got '%s'\n", s ? s : "");
        exit(2);
    }
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    cfg.backend.sin_family = AF_INET;
    cfg.backend.sin_port = htons((uint16_t)parse_int(colon + 1, 1, 65535, "--backend port"));
    if (inet_pton(AF_INET, host, &cfg.backend.sin_addr) != 1 ||
        (ntohl(cfg.backend.sin_addr.s_addr) >> 24) != 127) {
        fprintf(stderr, "floor: --backend wants a loopback IPv4 address, got '%s'\n", host);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    int port_given = 0;
    for (int i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--port"))
            cfg.port = parse_int(v, 0, 65535, "--port"), port_given = 1;
        else if (!strcmp(argv[i], "--backend"))
            parse_backend(v);
        else if (!strcmp(argv[i], "--threads"))
            cfg.threads = parse_int(v, 1, MAX_THREADS, "--threads");
        else if (!strcmp(argv[i], "--coalesce-us"))
            cfg.coalesce_us = parse_int(v, 0, 999999, "--coalesce-us");
        else if (!strcmp(argv[i], "--fanout"))
            cfg.fanout = parse_int(v, 1, MAX_FANOUT, "--fanout");
        else
            usage();
    }
    if (!port_given || !cfg.backend.sin_port)
        usage();
    if (!cfg.threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cfg.threads = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
    }
    signal(SIGPIPE, SIG_IGN);
    ds_requests_init();
    if (cfg.port)
        close(listen_on(cfg.port, 0)); /* the port is free (dies if not) */
    static struct worker workers[MAX_THREADS];
    for (int i = 0; i < cfg.threads; i++)
        worker_init(&workers[i]);
    fprintf(stderr, "floor: 127.0.0.1:%d, %d threads, K=%d, backend %s:%d\n", cfg.port, cfg.threads,
            cfg.fanout, inet_ntoa(cfg.backend.sin_addr), ntohs(cfg.backend.sin_port));
    for (int i = 1; i < cfg.threads; i++)
        if ((errno = pthread_create(&workers[i].tid, NULL, worker_main, &workers[i])))
            die("pthread_create");
    worker_main(&workers[0]);
    return 0;
}

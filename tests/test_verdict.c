/* test_verdict.c: the steady-state verdict's error rates, on systems with exact answers.
 *
 * The shipped sim.c is included with its main() compiled out. Each system runs over a fixed
 * list of seeds (1000, 1001, ...) at the default 5 replications, as `--replications 5
 * --seed S` would (rep_seed), so the rates below are deterministic; the truths they are
 * judged by come from queueing theory computed here (Erlang C, Pollaczek-Khinchine, exact
 * MVA), never from the simulator:
 *   stationary  an M/M/5 at rho 0.85, an M/G/1 at rho 0.7, a saturated closed network:
 *               "not steady" in at most 5% of seeds (the false-alarm rate);
 *   transient   overload (rho = 1 and 1.05), users starting over most of the run, a queue
 *               still filling at rho 0.96, a response-time tail as long as the window:
 *               "not steady" in at least 95% of seeds;
 *   skewed/heavy service whose time's cs^2 is 4.25 (lognormal, p99/p50 20) from empty at rho
 *               0.97 in a window under one of its relaxation times, and lognormal times of
 *               p99/p50 335 (a cpu() at rho 0.5, a call) in 9 s windows: "not steady" in at
 *               least 95% of seeds (as transient), or, for the heavy tails, the interval holds
 *               the exact mean in at least 90% of those called steady; the same skewed service
 *               at rho 0.7 over 56 relaxation times is stationary (<= 5% "not steady");
 *   near        an M/M/1 at rho 0.95 on 1 ms jobs (25 relaxation times, 5 replications), in
 *               --full at rho 0.99 on 10 us jobs (22.6 relaxation times, 5 replications),
 *               and at the default settings (one run in 10 batches: the run is over
 *               REP_CHEAP requests) an M/M/2 (--full), an M/D/1 and an M/G/1 of cs^2 4.25
 *               (--near: 2.2 and 5.7 M requests a seed, too dear for CI) at rho 0.99
 *               on windows of 50 relaxation times (M/M/1's, 1 / (mu (1 - sqrt(rho))^2),
 *               Abate and Whitt, times max(1, (1 + cs^2) / 2)), over VERDICT_NEAR_SEEDS seeds
 *               (--near: all four, VERDICT_NEAR_MORE_SEEDS).
 *               Such a window has forgotten its empty start, so it is called steady in at
 *               least min_steady of the seeds, and among those the 95% interval holds the
 *               exact mean response time >= 90%. Coverage alone would pass a detector that
 *               never says "steady".
 *   short       M/M/1 at rho 0.99 and 0.999 on windows of seconds, a quarter and a
 *               400th of a relaxation time: the queue is still filling from empty, so "not
 *               steady" in at least 95% of seeds (as transient).
 *   warm-up     the warm-up a scenario that leaves `warmup` to the default gets (rep_warmup)
 *               against MSER-5 on throughput alone (the rule before it): an M/M/1 and the
 *               skewed M/G/1 from empty at rho 0.97 over 27 and 26 relaxation times, its
 *               warm-up reaching one relaxation time in at least MIN_REACHED% of seeds; the
 *               stationary systems above left to the default warm-up, "not steady" in at
 *               most 5% and the interval holding the exact mean as often as before (within
 *               a seed). Only in --full (fewer seeds) and --near.
 * Without arguments (make test) VERDICT_SEEDS seeds of the virtual model run; `test_verdict
 * --full` (make check-verdict, run by CI) runs VERDICT_FULL_SEEDS of both models and the
 * expensive near-saturation systems (--full-rates), and the warm-up (--full-warmup);
 * `test_verdict --near` only the near-saturation systems at rho 0.99, the M/D/1 and M/G/1
 * with them, over VERDICT_NEAR_MORE_SEEDS seeds, and the warm-up over WARMUP_NEAR_SEEDS
 * (minutes of CPU: not in CI). Exit
 * 1 when a rate misses its target. */
#define SIM_NO_MAIN
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function" /* the command line is not tested here */
#include "sim.c"
#pragma GCC diagnostic pop
#include "tests/check.h"

#define VERDICT_REPS 5
#if defined(__SANITIZE_ADDRESS__) /* a run is ~10x slower */
#define VERDICT_SEEDS 40
#else
#define VERDICT_SEEDS 200
#endif
#define VERDICT_FULL_SEEDS 200
#define VERDICT_NEAR_SEEDS 20
#define VERDICT_NEAR_MORE_SEEDS 100 /* --near */
/* The least share (%) of seeds a near-saturation window past its relaxation must be called
 * steady in. Such a window has forgotten its empty start, so only the batch-mean tests can
 * refuse it: each a false alarm in at most STEADY_ALPHA of stationary windows, as the
 * stationary systems' <= 5% holds them; near saturation the batch means stay correlated
 * longer, so the floors sit below that: rho 0.95 over 200 seeds is called steady in all but
 * a few; at rho 0.99 a window of 50 relaxation times, 5 batch means of 10 each, at least a
 * third of the seeds. */
#define MIN_STEADY_95  90
#define MIN_STEADY_99F 85
#define MIN_STEADY_99  30
/* The warm-up a scenario left to the default gets (rep_warmup), from empty at rho 0.97 over
 * a window past STEADY_RELAX relaxation times: the least share (%) of seeds whose warm-up
 * reaches one relaxation time. One run's number in system measures its own relaxation time
 * with about as much noise as signal (one time scale rules both), and low (a mean taken
 * from a window of a few dozen of them), so this is a floor well above MSER-5's on
 * throughput alone (a few seeds in a hundred), not a majority. */
#define MIN_REACHED        15
#define WARMUP_NEAR_SEEDS 200

/* Costs that are not queueing theory's, zeroed; FCFS cores (a slice longer than any job). */
#define PURE                                                                                       \
    "os.ctx_switch = 0\nos.timeslice = 10s\nos.wakeup = 0\nos.thread_create = 0\n"                 \
    "platform.max_threads = 10000\nplatform.min_spare = 10000\n"                                   \
    "platform.max_connections = 1000000\nvirtual.create = 0\nvirtual.park = 0\n"                   \
    "virtual.unpark = 0\n"

enum { STATIONARY, TRANSIENT, NEAR, HEAVY };
/* Where a dear system runs: --full with --replications 5, --full at the default settings
 * (one run in batches), or only in --near (not in CI: under a minute of CPU). */
enum dear { EVERY, FULL_REPS, FULL, NEAR_ONLY };

struct system {
    const char *name, *text;
    int kind;
    double exact_ms; /* the exact mean response time (all but TRANSIENT) */
    int full_only;   /* too many events for make test (enum dear) */
    int min_steady;  /* NEAR: the least percentage of seeds called steady */
};

/* Erlang C's mean response time (ms) of M/M/c: arrivals lambda/s, mean service s seconds. */
static double mmc_w(int c, double lambda, double s)
{
    double a = lambda * s, term = 1, sum = 0; /* term = a^k / k! */
    for (int k = 0; k < c; k++) {
        sum += term;
        term *= a / (k + 1);
    }
    double last = term * c / (c - a);
    return (last / (sum + last) / (c / s - lambda) + s) * 1e3;
}

/* Pollaczek-Khinchine's mean response time (ms) of M/G/1: E[S] s, E[S^2] s^2. */
static double mg1_w(double lambda, double es, double es2)
{
    return (es + lambda * es2 / (2 * (1 - lambda * es))) * 1e3;
}

/* Exact MVA's mean response time (ms): n users thinking z s, one exponential queue of mean s. */
static double mva_r(int n, double s, double z)
{
    double q = 0, r = 0;
    for (int k = 1; k <= n; k++) {
        r = s * (1 + q);
        q = k / (r + z) * r;
    }
    return r * 1e3;
}

/* The k-th moment (s^k) of a lognormal of median p50 and 99th percentile p99 (s). */
static double lgn_moment(double p50, double p99, int k)
{
    double sigma = log(p99 / p50) / Z99;
    return pow(p50, k) * exp(k * k * sigma * sigma / 2);
}

static void load(struct scenario *s, const char *text)
{
    char err[512];
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    scn_defaults(s);
    if (!f || scn_read(s, f, "test", NULL, 0, err, sizeof err) < 0 ||
        scn_finish(s, "test", err, sizeof err) < 0) {
        fprintf(stderr, "test scenario does not load: %s\n", err);
        exit(1);
    }
    fclose(f);
}

/* The report of model mk as ./sim makes it by default (sim_intervals): VERDICT_REPS
 * replications of seed `seed`, or one run in batches when they would be dear; with
 * `forced`, VERDICT_REPS replications whatever they cost (--replications). */
static void report(struct scenario *s, uint64_t seed, int mk, int forced, struct report *rp)
{
    struct result runs[VERDICT_REPS * MODEL_N];
    struct options none = {.replications = forced ? VERDICT_REPS : 0};
    int reps, batches;
    sim_intervals(s, &none, &reps, &batches);
    for (int i = 0; i < reps; i++) {
        struct model m;
        s->seed = rep_seed(seed, i);
        model_init(&m, s, mk);
        if (batches)
            model_batches(&m, batches);
        model_run(&m, s->duration);
        rep_result(&m, &runs[i * MODEL_N + mk]);
        runs[i * MODEL_N + !mk] = runs[i * MODEL_N + mk]; /* only mk is judged */
        if (batches)
            rep_batched(rp, (struct model[MODEL_N]){m, m});
        model_free(&m);
    }
    if (!batches)
        rep_replicated(rp, runs, reps);
#ifdef VERDICT_NEVER_STEADY /* a detector that never says "steady": the near check must fail */
    rp->r[mk].steady = 0;
#endif
}

static void test_system(const struct system *sys, int seeds, int mk)
{
    struct scenario s;
    int notst = 0, steady = 0, cover = 0;
    load(&s, sys->text);
    for (int i = 0; i < seeds; i++) {
        struct report rp;
        report(&s, 1000 + (uint64_t)i, mk, sys->full_only == FULL_REPS, &rp);
        const struct result *r = &rp.r[mk];
        notst += !r->steady;
        steady += r->steady;
        cover += r->steady && fabs(r->mean - sys->exact_ms) <= rp.ci[mk].mean;
    }
    printf("  %-10s %-8s not steady %3d of %d (%.1f%%)", sys->name, model_names[mk], notst, seeds,
           100.0 * notst / seeds);
    if (sys->kind != TRANSIENT && steady)
        printf("; steady %d, interval holds the exact mean %.4g ms in %d", steady, sys->exact_ms,
               cover);
    putchar('\n');
    if (sys->kind == STATIONARY)
        CHECK(notst * 100 <= 5 * seeds, "%s %s: stationary, 'not steady' in %d of %d seeds",
              sys->name, model_names[mk], notst, seeds);
    else if (sys->kind == TRANSIENT)
        CHECK(notst * 100 >= 95 * seeds, "%s %s: transient, 'not steady' in only %d of %d seeds",
              sys->name, model_names[mk], notst, seeds);
    else if (sys->kind == HEAVY)
        CHECK(notst * 100 >= 95 * seeds || cover * 10 >= 9 * steady,
              "%s %s: heavy tail, 'not steady' in %d of %d seeds, and among %d steady the "
              "interval holds %.4g ms in only %d",
              sys->name, model_names[mk], notst, seeds, steady, sys->exact_ms, cover);
    else {
        CHECK(steady * 100 >= sys->min_steady * seeds,
              "%s %s: near saturation past its relaxation, steady in only %d of %d seeds "
              "(want %d%%)",
              sys->name, model_names[mk], steady, seeds, sys->min_steady);
        CHECK(cover * 10 >= 9 * steady,
              "%s %s: near saturation, among %d steady seeds the interval holds %.4g ms in %d",
              sys->name, model_names[mk], steady, sys->exact_ms, cover);
    }
}

/* The warm-ups a scenario that leaves `warmup` to the default gets (sim_warmup_auto) from the
 * first replication of model mk of seed `seed`: [0] by MSER-5 on throughput alone (the rule
 * before the number in system was read), [1] by rep_warmup (the rule shipped). The shipped
 * rule takes the later of both models' cuts; here only mk's. */
static void auto_warmups(const struct scenario *s, uint64_t seed, int mk, simtime warm[2])
{
    struct scenario t = *s;
    struct model m;
    t.seed = rep_seed(seed, 0);
    model_init(&m, &t, mk);
    model_run(&m, t.duration);
    double after = (double)t.warmup / SEC, cut[2] = {rep_mser5(&m, after), rep_warmup(&m, after)};
    for (int k = 0; k < 2; k++) {
        struct scenario u = *s;
        sim_warmup_auto(&u, cut[k]);
        warm[k] = u.warmup;
    }
    model_free(&m);
}

/* A scenario's text loaded as if it left `warmup` to the default. */
static void load_auto(struct scenario *s, const char *text)
{
    struct scenario d;
    scn_defaults(&d);
    load(s, text);
    s->warmup = d.warmup;
    s->warmup_auto = 1;
}

/* A queue filling from empty, open loop at rho 0.97 on one core (1 ms mean jobs, cs2 the
 * service time's squared coefficient of variation), over a window past STEADY_RELAX of its
 * relaxation times (M/M/1's, Abate and Whitt, times (1 + cs^2) / 2: rep_relax, given the
 * exact rho and cs^2): the warm-up should reach one relaxation time, by which the mean number
 * in system has come within about 7% of its limit. Throughput barely moves while the queue
 * fills, so MSER-5 on throughput reaches it in almost no seed; the number in system's
 * relaxation (rep_fill) in at least min_pct% of them. */
static void test_filling(const char *name, const char *text, double cs2, int seeds, int min_pct)
{
    struct scenario s;
    int reached[2] = {0, 0};
    double sum[2] = {0, 0}, relax = rep_relax(1000, 0.97, cs2);
    load_auto(&s, text);
    for (int i = 0; i < seeds; i++) {
        simtime warm[2];
        auto_warmups(&s, 1000 + (uint64_t)i, MODEL_VIRTUAL, warm);
        for (int k = 0; k < 2; k++) {
            reached[k] += (double)warm[k] / SEC >= relax;
            sum[k] += (double)warm[k] / SEC;
        }
    }
    printf("  %-10s warm-up from empty, %.1f s run, relaxation time %.2f s: reached by MSER-5 "
           "on throughput in %d of %d seeds (mean warm-up %.2f s), with the number in system "
           "in %d (%.2f s)\n",
           name, (double)s.duration / SEC, relax, reached[0], seeds, sum[0] / seeds, reached[1],
           sum[1] / seeds);
    CHECK(reached[1] * 100 >= min_pct * seeds && reached[1] > reached[0],
          "%s: the warm-up reached the relaxation time %.2f s in only %d of %d seeds (want "
          "%d%%; MSER-5 on throughput alone: %d)",
          name, relax, reached[1], seeds, min_pct, reached[0]);
}

/* A stationary system left to the default warm-up: its verdict and interval over `seeds`
 * seeds at 5 replications, with the warm-up found by MSER-5 alone and by rep_warmup. The
 * shipped rule must keep false "not steady" within 5% and not lower the coverage. */
static void test_auto_stationary(const struct system *sys, int seeds, int mk)
{
    struct scenario s;
    int notst[2] = {0, 0}, steady[2] = {0, 0}, cover[2] = {0, 0};
    double sum[2] = {0, 0};
    load_auto(&s, sys->text);
    for (int i = 0; i < seeds; i++) {
        simtime warm[2];
        struct report rp;
        auto_warmups(&s, 1000 + (uint64_t)i, mk, warm);
        for (int k = 0; k < 2; k++) {
            struct scenario u = s;
            u.warmup = warm[k];
            if (k == 0 || warm[1] != warm[0]) /* else the same report */
                report(&u, 1000 + (uint64_t)i, mk, 0, &rp);
            const struct result *r = &rp.r[mk];
            notst[k] += !r->steady;
            steady[k] += r->steady;
            cover[k] += r->steady && fabs(r->mean - sys->exact_ms) <= rp.ci[mk].mean;
            sum[k] += (double)warm[k] / SEC;
        }
    }
    printf("  %-10s %-8s default warm-up, not steady / interval holds %.4g ms among steady: "
           "MSER-5 alone %d of %d / %d of %d (warm-up %.2f s), with the number in system "
           "%d / %d of %d (%.2f s)\n",
           sys->name, model_names[mk], sys->exact_ms, notst[0], seeds, cover[0], steady[0],
           sum[0] / seeds, notst[1], cover[1], steady[1], sum[1] / seeds);
    CHECK(notst[1] * 100 <= 5 * seeds,
          "%s %s: stationary at the default warm-up, 'not steady' in %d of %d seeds",
          sys->name, model_names[mk], notst[1], seeds);
    /* not lower: the same seeds' coverage, within one seed */
    CHECK(cover[1] * steady[0] >= cover[0] * steady[1] - steady[0],
          "%s %s: at the default warm-up the interval held the exact mean in %d of %d steady "
          "seeds, against %d of %d with MSER-5 alone",
          sys->name, model_names[mk], cover[1], steady[1], cover[0], steady[0]);
}

/* The warm-up a scenario left to the default gets: from empty at rho 0.97, and on the
 * stationary systems (CI's --full: fewer seeds for its time; --near: WARMUP_NEAR_SEEDS). */
static void test_warmup(const struct system *systems, size_t n, int near)
{
    test_filling("M/M/1 .97",
                 "rate = 970\nusers = 0\ncores = 1\nprogram = cpu(exp(1ms))\n"
                 "duration = 120s\n" PURE,
                 1, near ? WARMUP_NEAR_SEEDS : 100, MIN_REACHED);
    test_filling("M/G/1 .97",
                 "rate = 970\nusers = 0\ncores = 1\nprogram = cpu(lognormal(0.43644ms,8.7287ms))\n"
                 "duration = 300s\n" PURE,
                 4.25, near ? WARMUP_NEAR_SEEDS : 40, MIN_REACHED);
    for (size_t i = 0; i < n; i++)
        if (systems[i].kind == STATIONARY)
            test_auto_stationary(&systems[i], near ? WARMUP_NEAR_SEEDS : 100, MODEL_VIRTUAL);
}

/* The tests' p-values against Student's t quantiles from tables (two-sided 5% and 1%). */
static void test_t_pvalue(void)
{
    static const struct {
        double t;
        int df;
        double p;
    } tab[] = {{12.706, 1, 0.05}, {4.303, 2, 0.05},  {2.776, 4, 0.05},  {2.306, 8, 0.05},
               {3.355, 8, 0.01},  {2.086, 20, 0.05}, {2.000, 60, 0.05}, {2.660, 60, 0.01}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        CHECK(fabs(rep_t_pvalue(tab[i].t, tab[i].df) - tab[i].p) < 2e-4 * (tab[i].p / 0.01),
              "P(|T| > %g), %d df = %g: got %g", tab[i].t, tab[i].df, tab[i].p,
              rep_t_pvalue(tab[i].t, tab[i].df));
    CHECK(rep_t_pvalue(0, 10) == 1, "P(|T| > 0) = 1");
}

int main(int argc, char **argv)
{
    /* --full is --full-rates and --full-warmup, which CI runs side by side */
    const char *arg = argc > 1 ? argv[1] : "";
    int full = !strncmp(arg, "--full", 6), near = !strcmp(arg, "--near"),
        rates = strcmp(arg, "--full-warmup") != 0,
        warmup = near || (full && strcmp(arg, "--full-rates") != 0);
    const struct system systems[] = {
        {"M/M/5",
         "rate = 106.25\nusers = 0\ncores = 5\nprogram = cpu(exp(40ms))\n"
         "duration = 60s\nwarmup = 5s\n" PURE,
         STATIONARY, mmc_w(5, 106.25, 0.040), 0, 0},
        {"M/G/1",
         "rate = 70\nusers = 0\ncores = 1\nprogram = cpu(uniform(5ms,15ms))\n"
         "duration = 60s\nwarmup = 5s\n" PURE,
         STATIONARY, mg1_w(70, 0.010, 1e-4 + 1e-4 / 12), 0, 0},
        {"closed",
         "users = 20\nthink = exp(200ms)\ncores = 1\nprogram = cpu(exp(20ms))\n"
         "duration = 60s\nwarmup = 5s\n" PURE,
         STATIONARY, mva_r(20, 0.020, 0.200), 0, 0},
        {"rho=1",
         "rate = 100\nusers = 0\ncores = 1\nprogram = cpu(exp(10ms))\n"
         "duration = 40s\nwarmup = 4s\n" PURE,
         TRANSIENT, 0, 0, 0},
        {"rho=1.05",
         "rate = 105\nusers = 0\ncores = 1\nprogram = cpu(exp(10ms))\n"
         "duration = 40s\nwarmup = 4s\n" PURE,
         TRANSIENT, 0, 0, 0},
        {"rampup",
         "users = 40\nthink = exp(400ms)\nrampup = 30s\ncores = 1\n"
         "program = cpu(exp(10ms))\nduration = 40s\nwarmup = 5s\n" PURE,
         TRANSIENT, 0, 0, 0},
        {"filling",
         "rate = 96\nusers = 0\ncores = 1\nprogram = cpu(exp(10ms))\n"
         "duration = 80s\nwarmup = 0\n" PURE,
         TRANSIENT, 0, 0, 0},
        {"long tail",
         "rate = 20\nusers = 0\nprogram = call(A)\n"
         "service.A.latency = lognormal(2s,20s)\nduration = 20s\nwarmup = 4s\n" PURE,
         TRANSIENT, 0, 0, 0},
        {"rho=0.99",
         "rate = 990\nusers = 0\ncores = 1\nprogram = cpu(exp(1ms))\n"
         "duration = 10s\nwarmup = 1s\n" PURE,
         TRANSIENT, 0, 0, 0},
        {"rho=0.999",
         "rate = 999\nusers = 0\ncores = 1\nprogram = cpu(exp(1ms))\n"
         "duration = 10s\nwarmup = 1s\n" PURE,
         TRANSIENT, 0, 0, 0},
        /* 39 s against a relaxation time of 1.56 s: 25 of them, past the detector's
         * STEADY_RELAX, so only its batch-mean tests (each a false alarm in at most
         * STEADY_ALPHA) and the memory check stand between it and "steady". */
        {"rho=0.95",
         "rate = 950\nusers = 0\ncores = 1\nprogram = cpu(exp(1ms))\n"
         "duration = 43s\nwarmup = 4s\n" PURE,
         NEAR, 1e3 / (1000 - 950), 0, MIN_STEADY_95},
        /* lognormal service of cs^2 4.25 (p99/p50 20) from empty at rho 0.97: its
         * relaxation time is 4.4 s x 2.6, the window 2.5 s */
        {"skewed",
         "rate = 970\nusers = 0\ncores = 1\nprogram = cpu(lognormal(0.43644ms,8.7287ms))\n"
         "duration = 3s\nwarmup = 0.5s\n" PURE,
         TRANSIENT, 0, 0, 0},
        /* the same service at rho 0.7 over 56 of its relaxation times */
        {"skewed 0.7",
         "rate = 70\nusers = 0\ncores = 1\nprogram = cpu(lognormal(4.3644ms,87.287ms))\n"
         "duration = 60s\nwarmup = 5s\n" PURE,
         STATIONARY, mg1_w(70, 0.010, 5.25e-4), 0, 0},
        /* lognormal of p99/p50 335, mean 4.54 ms: an M/G/1 at rho 0.5 (exact 1,177 ms, mostly
         * from jobs rarer than one a run), and a call with no queue */
        {"heavy cpu",
         "rate = 110\nusers = 0\ncores = 1\nprogram = cpu(lognormal(0.2ms,67ms))\n"
         "duration = 10s\nwarmup = 1s\n" PURE,
         HEAVY, mg1_w(110, lgn_moment(0.2e-3, 67e-3, 1), lgn_moment(0.2e-3, 67e-3, 2)), 0, 0},
        {"heavy call",
         "rate = 100\nusers = 0\nprogram = call(A)\nservice.A.latency = lognormal(0.2ms,67ms)\n"
         "duration = 10s\nwarmup = 1s\n" PURE,
         HEAVY, lgn_moment(0.2e-3, 67e-3, 1) * 1e3, 0, 0},
        /* 9 s against 0.40 s: 22.6 relaxation times, just past STEADY_RELAX; 5 replications
         * (--replications 5: by default this run is one in batches, which would need 40) */
        {"rho=0.99f",
         "rate = 99000\nusers = 0\ncores = 1\nprogram = cpu(exp(10us))\n"
         "duration = 10s\nwarmup = 1s\n" PURE,
         NEAR, 1e3 / (100000 - 99000), FULL_REPS, MIN_STEADY_99F},
        /* rho 0.99 on 50 relaxation times (0.40 s; 2.1 s for cs^2 4.25) after 5 of warm-up,
         * at the default settings (one run in 10 batches); the M/D/1 and M/G/1 only in
         * --near, to keep CI's time */
        {"M/M/2 .99",
         "rate = 99000\nusers = 0\ncores = 2\nprogram = cpu(exp(20us))\n"
         "duration = 22s\nwarmup = 2s\n" PURE,
         NEAR, mmc_w(2, 99000, 20e-6), FULL, MIN_STEADY_99},
        {"M/D/1 .99",
         "rate = 99000\nusers = 0\ncores = 1\nprogram = cpu(10us)\n"
         "duration = 22s\nwarmup = 2s\n" PURE,
         NEAR, mg1_w(99000, 10e-6, 1e-10), NEAR_ONLY, MIN_STEADY_99},
        {"M/G/1 .99",
         "rate = 49500\nusers = 0\ncores = 1\nprogram = cpu(lognormal(8.7287us,174.567us))\n"
         "duration = 115s\nwarmup = 10s\n" PURE,
         NEAR, mg1_w(49500, 20e-6, 5.25 * 20e-6 * 20e-6), NEAR_ONLY, MIN_STEADY_99},
    };
    printf("test_verdict: %s, %d replications each, seeds from 1000\n",
           full   ? "every system, both models"
           : near ? "near saturation (rho 0.99) over more seeds, and the warm-up from empty"
                  : "a subset (--full: all, both models)",
           VERDICT_REPS);
    test_t_pvalue();
    for (size_t i = 0; rates && i < sizeof systems / sizeof systems[0]; i++) {
        const struct system *sys = &systems[i];
#if defined(__SANITIZE_ADDRESS__)
        /* Near saturation a seed is tens of thousands of requests, ten times slower here: its
         * rates are statistics of the engine test_sim already runs under ASan, and they run
         * in make test and make check-verdict; its two checks are counted as skipped. */
        if (sys->kind == NEAR && !full && !sys->full_only) {
            SKIP(2, "%s: near saturation, not under ASan (make test and check-verdict run it)",
                 sys->name);
            continue;
        }
#endif
        /* --near: every dear system near saturation, over more seeds than --full affords */
        int dear_near = sys->kind == NEAR && sys->full_only;
        if (near ? !dear_near : sys->full_only == NEAR_ONLY)
            continue;
        if (sys->full_only && (full || near)) /* 1-6 M requests a seed: fewer seeds */
            test_system(sys, near ? VERDICT_NEAR_MORE_SEEDS : VERDICT_NEAR_SEEDS, MODEL_VIRTUAL);
        for (int mk = full ? 0 : MODEL_VIRTUAL; mk < MODEL_N && !sys->full_only; mk++)
            test_system(sys, full ? VERDICT_FULL_SEEDS : VERDICT_SEEDS, mk);
    }
    if (warmup) /* --near: more seeds */
        test_warmup(systems, sizeof systems / sizeof systems[0], near);
    return check_done("test_verdict");
}

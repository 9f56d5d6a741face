/* fuzz_live.c: libFuzzer target for --live's reading of an answer from /metrics: the HTTP
 * status line and body (live_answer), the Prometheus text (live_parse), and the sample two
 * scrapes make (live_delta), against a fixed scrape on either side. Beyond not crashing,
 * every sample it makes is a row the table can print: finite, never negative. */
#define SIM_NO_MAIN
#include "sim.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check(const struct live_sample *x)
{
    const double v[] = {x->rps, x->errors_per_s, x->p50_ms,        x->p99_ms,      x->os_threads,
                        x->rss, x->vt_parked,    x->carriers_busy, x->connections, x->pool_queue};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (!isfinite(v[i]) || v[i] < 0)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char fixed[] = "agg_requests_total{status=\"200\"} 900\n"
                                "agg_requests_total{status=\"503\"} 100\n"
                                "agg_request_seconds_bucket{le=\"0.1\"} 500\n"
                                "agg_request_seconds_bucket{le=\"+Inf\"} 1000\n"
                                "agg_os_threads 24\nagg_carriers 2\n";
    char *buf = malloc(size + 1), err[512] = "";
    memcpy(buf, data, size);
    buf[size] = 0;
    const char *body = live_answer(buf, size, err, sizeof err);
    if (!body && !err[0])
        abort(); /* a refusal says why */
    struct live_scrape a, b;
    if (body && live_parse(fixed, &a, err, sizeof err) == 0) {
        if (live_parse(body, &b, err, sizeof err) == 0) {
            struct live_sample x = live_delta(&a, &b, 1, 1), y = live_delta(&b, &a, 2, 0.5);
            fuzz_check(&x);
            fuzz_check(&y);
        } else if (strncmp(err, "/metrics", 8) != 0) {
            abort(); /* an error names the page and its line */
        }
    }
    free(buf);
    return 0;
}

/* fuzz_scenario.c: libFuzzer target for the scenario parser, and for the engine on whatever
 * the parser accepts. Build and run: make fuzz (clang, -fsanitize=fuzzer,address,undefined).
 *
 * Every input is parsed as a scenario file; an accepted one is simulated for 20 ms of
 * simulated time with at most 2,000 users, so each input stays fast while still driving the
 * models through configurations nobody wrote by hand. */
#define SIM_NO_MAIN
#include "sim.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct scenario s;
    char err[512];
    (void)opt_parse, (void)sim_load, (void)sim_headless, (void)sim_validate,
        (void)sim_live_text; /* not fuzzed here */
    (void)ui_window, (void)ui_frames, (void)ui_screenshot, (void)sim_load_window,
        (void)sim_live_open, (void)sim_live_collect;
    (void)sim_screenshot;
    (void)sim_frames;
    (void)sim_window;
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    scn_defaults(&s);
    int rc = scn_read(&s, f, "fuzz", NULL, 0, err, sizeof err);
    fclose(f);
    if (rc == 0)
        rc = scn_finish(&s, "fuzz", err, sizeof err);
    if (rc < 0) {
        if (strncmp(err, "fuzz:", 5) != 0)
            abort(); /* every error names where it is */
        return 0;
    }
    if (s.users > 2000)
        s.users = 2000;
    if (s.rate > 1e5)
        s.rate = 1e5;
    if (s.max_threads > 2000)
        s.max_threads = 2000;
    if (s.min_spare > s.max_threads)
        s.min_spare = s.max_threads;
    if (s.max_pool_size > 2000)
        s.max_pool_size = 2000;
    if (s.cores > 64)
        s.cores = 64;
    s.duration = 20 * MS;
    s.warmup = 0;
    for (int k = 0; k < MODEL_N; k++) {
        struct model m;
        model_init(&m, &s, k);
        model_run(&m, s.duration);
        uint64_t done = m.stats.completed;
        for (int i = 0; i < FAIL_N; i++)
            done += m.stats.failed[i];
        if (done > m.stats.arrived)
            abort(); /* conservation */
        model_free(&m);
    }
    return 0;
}

/* bench_ui.c: per-frame drawing time of the window at 1280x800 with the software renderer,
 * at 100, 5,000 and 100,000 virtual threads in flight (make bench; not a test). Every user
 * is parked on one 1 s call, so the parking lot and the platform queue are full.
 * Prints the median of 31 frames for two target formats: ABGR8888 (the screenshot path) and
 * XRGB8888 (what a software-rendered window draws into). */
#define SIM_NO_MAIN
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "sim.c"
#pragma GCC diagnostic pop

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_frame_ms(struct ui_canvas *c, const struct ui_sim *x, const struct ui_view *v)
{
    enum { N = 31 };
    double t[N];
    for (int i = 0; i < N; i++) {
        double t0 = ui_wall();
        ui_canvas_draw(c, x->m, v);
        t[i] = (ui_wall() - t0) * 1e3;
    }
    qsort(t, N, sizeof t[0], cmp_double);
    return t[N / 2];
}

int main(void)
{
    static const char text[] =
        "name = draw benchmark\nthink = 0\nduration = 4s\nwarmup = 1s\n"
        "program = call(slow)\nservice.slow.latency = 1s\nplatform.max_connections = 10000000\n";
    struct ui_options uo = {0};
    long loads[] = {100, 5000, 100000};
    printf("%9s %16s %20s %20s\n", "users", "virtual threads", "ms/frame (ABGR)",
           "ms/frame (XRGB)");
    for (int i = 0; i < 3; i++) {
        struct ui_sim *x = calloc(1, sizeof *x);
        char err[256], value[32];
        struct scn_src src = {"bench", 0, err, sizeof err};
        FILE *f = fmemopen((void *)text, sizeof text - 1, "r");
        scn_defaults(&x->s);
        snprintf(value, sizeof value, "%ld", loads[i]);
        if (scn_read(&x->s, f, "bench", NULL, 0, err, sizeof err) < 0 ||
            scn_set(&x->s, "users", value, &src) < 0 ||
            scn_finish(&x->s, "bench", err, sizeof err) < 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        fclose(f);
        ui_sim_reset(x);
        ui_sim_run(x, 2 * SEC);
        struct ui_view v = ui_view_at(x->t);
        double ms[2];
        Uint32 formats[2] = {SDL_PIXELFORMAT_ABGR8888, SDL_PIXELFORMAT_RGB888};
        for (int k = 0; k < 2; k++) {
            struct ui_canvas c;
            if (ui_canvas_open_format(&c, &uo, formats[k]) < 0)
                return 1;
            ms[k] = median_frame_ms(&c, x, &v);
            ui_canvas_close(&c);
        }
        printf("%9ld %16d %20.2f %20.2f\n", loads[i], x->m[MODEL_VIRTUAL].vt_alive, ms[0], ms[1]);
        ui_sim_free(x);
        free(x);
    }
    return 0;
}

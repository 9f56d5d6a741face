/* test_ui.c: the Window section, headless. Pixels rendered by the software renderer from
 * fixed scenarios and seeds, and the step-through logic without pixels.
 *
 * Truth here is independent of the drawing code where it can be: colours are compared
 * with the Okabe-Ito values of the design guide, counts with the models' own state, and a
 * rewound run with a run that never rewound. */
#define SIM_NO_MAIN
#pragma GCC diagnostic push
/* main() is compiled out, and with it the only callers of the command-line helpers (and of
 * ui_window): this test does not name them one by one, so it survives their changes */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "sim.c"
#pragma GCC diagnostic pop
#include "tests/check.h"
#include <glob.h>
#include <signal.h>

/* A scenario from defaults and "key=value" strings: no files needed. */
static void tu_scenario(struct scenario *s, const char *const *kv)
{
    char err[256], buf[256], *key, *value;
    struct scn_src src = {"test_ui", 0, err, sizeof err};
    scn_defaults(s);
    for (; *kv; kv++) {
        snprintf(buf, sizeof buf, "%s", *kv);
        if (scn_split(buf, &key, &value) < 0 || scn_set(s, key, value, &src) < 0) {
            fprintf(stderr, "%s: %s\n", *kv, err);
            exit(1);
        }
    }
    if (scn_finish(s, "test_ui", err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
}

static const char *const tu_demo[] = {"users=1000",
                                      "duration=4s",
                                      "warmup=1s",
                                      "program=cpu(100us) call(users) call(orders) call(prices)",
                                      "service.users.latency=50ms",
                                      "service.orders.latency=50ms",
                                      "service.prices.latency=50ms",
                                      NULL};

static uint32_t tu_pixel(const struct ui_canvas *c, float x, float y)
{
    const SDL_Surface *s = c->surf;
    int xi = (int)x, yi = (int)y;
    if (xi < 0 || yi < 0 || xi >= s->w || yi >= s->h)
        return 0;
    const uint8_t *p = (const uint8_t *)s->pixels + (size_t)yi * (size_t)s->pitch + (size_t)xi * 4;
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; /* ABGR8888 is R, G, B, A in memory */
}

/* Pixels in r whose colour is (want != 0) or is not (want == 0) `rgb`. */
static long tu_count(const struct ui_canvas *c, SDL_FRect r, uint32_t rgb, int want)
{
    long n = 0;
    for (int y = (int)r.y; y < (int)(r.y + r.h); y++)
        for (int x = (int)r.x; x < (int)(r.x + r.w); x++)
            n += (tu_pixel(c, (float)x, (float)y) == rgb) == want;
    return n;
}

static const struct ui_hit *tu_hit(const struct ui_canvas *c, int model, int kind, int32_t idx)
{
    for (int i = 0; i < c->g.nhit; i++) {
        const struct ui_hit *h = &c->g.hit[i];
        if (h->model == model && h->type == kind && (idx < 0 || h->idx == idx))
            return h;
    }
    return NULL;
}

/* Render scenario kv at time t into c (opened by the caller); the sim stays for checks. */
static void tu_render(struct ui_canvas *c, struct ui_sim *x, const char *const *kv, simtime t)
{
    tu_scenario(&x->s, kv);
    ui_sim_reset(x);
    ui_sim_run(x, t);
    struct ui_view v = ui_view_at(x->t);
    ui_canvas_draw(c, x->m, &v);
}

static const struct ui_options tu_opts = {0};

/* Open c and render kv at time t into it; the sim to free, or NULL (a failed check). */
static struct ui_sim *tu_open_render(struct ui_canvas *c, const char *const *kv, simtime t)
{
    struct ui_sim *x = calloc(1, sizeof *x);
    if (!x || ui_canvas_open(c, &tu_opts) < 0) {
        CHECK(0, "canvas");
        free(x);
        return NULL;
    }
    tu_render(c, x, kv, t);
    return x;
}

static void test_panels_and_text(void)
{
    struct ui_canvas c;
    struct ui_sim *x = calloc(1, sizeof *x);
    CHECK(ui_canvas_open(&c, &tu_opts) == 0,
          "opening a 1280x800 software canvas with the default font");
    tu_render(&c, x, tu_demo, 2 * SEC);
    uint32_t panel = ui_inks[UI_PANEL].dark;
    for (int k = 0; k < MODEL_N; k++) {
        const struct ui_hit *p = tu_hit(&c, k, UI_HIT_PANEL, -1),
                            *cnt = tu_hit(&c, k, UI_HIT_COUNTERS, -1);
        CHECK(p && cnt, "%s panel and its counters are laid out", model_names[k]);
        if (!p || !cnt)
            continue;
        long drawn = tu_count(&c, p->r, panel, 0), area = (long)(p->r.w * p->r.h);
        CHECK(drawn > area / 10, "%s panel: %ld of %ld pixels drawn over its ground",
              model_names[k], drawn, area);
        long glyphs = tu_count(&c, cnt->r, panel, 0);
        CHECK(glyphs > 300, "%s counters: %ld glyph pixels", model_names[k], glyphs);
    }
    /* the legend's swatches carry the design guide's colours */
    static const struct {
        int ink;
        uint32_t rgb;
    } guide[] = {{UI_RUN, 0x009E73},    {UI_READY, 0xF0E442},  {UI_IO, 0x56B4E9},
                 {UI_PINNED, 0xD55E00}, {UI_QUEUED, 0xE69F00}, {UI_IDLE, 0x999999}};
    for (size_t i = 0; i < sizeof guide / sizeof guide[0]; i++) {
        const struct ui_hit *h = tu_hit(&c, -1, UI_HIT_LEGEND, guide[i].ink);
        CHECK(h && tu_pixel(&c, h->r.x + h->r.w / 2, h->r.y + h->r.h / 2) == guide[i].rgb,
              "legend swatch %s is #%06X", ui_inks[guide[i].ink].legend, guide[i].rgb);
    }
    /* every platform thread is blocked on I/O most of the time: the lanes are mostly blue */
    const struct ui_hit *lanes = tu_hit(&c, MODEL_PLATFORM, UI_HIT_LANES, -1);
    CHECK(lanes && tu_count(&c, lanes->r, 0x56B4E9, 1) > lanes->r.w * lanes->r.h / 4,
          "platform lanes are mostly blocked-blue at 1000 users");
    /* inspecting a platform thread: its card names it, its state and its request's step */
    const struct model *p = &x->m[MODEL_PLATFORM];
    int32_t t = 0;
    while (t < p->nthr && (!p->thr[t].alive || p->thr[t].req < 0))
        t++;
    char lines[7][96];
    int n = t < p->nthr
                ? ui_card_lines(p, (struct ui_pick){MODEL_PLATFORM, UI_PICK_THREAD, t}, lines, 7)
                : 0;
    char want[32];
    snprintf(want, sizeof want, "T#%u", t < p->nthr ? p->thr[t].id : 0);
    CHECK(n >= 5 && strstr(lines[0], want) && strstr(lines[0], thr_state_names[p->thr[t].state]) &&
              strstr(lines[1], "created at") && strstr(lines[3], "step "),
          "card of %s: \"%s\" / \"%s\"", want, n > 0 ? lines[0] : "", n > 3 ? lines[3] : "");
    /* its history: a request past its first step lists the steps it has done */
    int32_t r = t < p->nthr ? p->thr[t].req : -1;
    CHECK(r >= 0 && (p->req[r].pc == 0 || (n == 6 && !strncmp(lines[5], "done: ", 6))),
          "the card lists the steps done (pc %d, %d lines)", r >= 0 ? p->req[r].pc : -1, n);
    CHECK(ui_screenshot(&x->s, 2 * SEC, "test_ui_demo.png", &tu_opts) == 0,
          "ui_screenshot writes a PNG");
    FILE *f = fopen("test_ui_demo.png", "rb");
    unsigned char sig[8] = {0};
    CHECK(f && fread(sig, 1, 8, f) == 8 && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8),
          "the file is a PNG");
    if (f)
        fclose(f);
    remove("test_ui_demo.png");
    ui_canvas_close(&c);
    ui_sim_free(x);
    free(x);
}

/* JDK 21: a virtual thread blocking inside synchronized pins its carrier. */
static void test_pinned_colour(void)
{
    static const char *const pin[] = {"users=100",
                                      "duration=2s",
                                      "warmup=0",
                                      "program=sync { call(A) }",
                                      "service.A.latency=50ms",
                                      NULL};
    struct ui_canvas c;
    struct ui_sim *x = tu_open_render(&c, pin, 1 * SEC);
    if (!x)
        return;
    const struct model *v = &x->m[MODEL_VIRTUAL];
    const struct ui_hit *legend = tu_hit(&c, -1, UI_HIT_LEGEND, UI_PINNED);
    uint32_t pinned =
        legend ? tu_pixel(&c, legend->r.x + legend->r.w / 2, legend->r.y + legend->r.h / 2) : 1;
    int checked = 0;
    for (int32_t t = 0; t < v->nthr; t++) {
        if (!v->thr[t].alive || v->thr[t].state != THR_BLOCKED || v->thr[t].req < 0 ||
            !v->req[v->thr[t].req].pinned)
            continue;
        const struct ui_hit *h = tu_hit(&c, MODEL_VIRTUAL, UI_HIT_THREAD, t);
        CHECK(h != NULL, "pinned carrier C#%u is drawn", v->thr[t].id);
        if (!h)
            continue;
        uint32_t got = tu_pixel(&c, h->r.x + 1, h->r.y + 1);
        CHECK(got == pinned && got == 0xD55E00,
              "pinned carrier C#%u is #%06X, legend's pinned is #%06X", v->thr[t].id, got, pinned);
        checked++;
    }
    CHECK(checked >= 1, "a carrier is pinned at t=1 s (vt_pinned %d)", v->vt_pinned);
    ui_canvas_close(&c);
    ui_sim_free(x);
    free(x);
}

/* The parking lot fills as load rises: 10x the users, more parked-blue pixels. */
static long tu_parked_pixels(struct ui_canvas *c, const char *users, int *parked)
{
    const char *kv[] = {
        users, "duration=3s", "warmup=0", "program=cpu(20us) call(A)", "service.A.latency=1s",
        NULL};
    struct ui_sim *x = calloc(1, sizeof *x);
    tu_render(c, x, kv, 1500 * MS);
    *parked = x->m[MODEL_VIRTUAL].vt_parked;
    const struct ui_hit *lot = tu_hit(c, MODEL_VIRTUAL, UI_HIT_LOT, -1);
    long n = lot ? tu_count(c, lot->r, 0x56B4E9, 1) : -1;
    ui_sim_free(x);
    free(x);
    return n;
}

static void test_lot_density(void)
{
    struct ui_canvas c;
    if (ui_canvas_open(&c, &tu_opts) < 0) {
        CHECK(0, "canvas");
        return;
    }
    int p100, p1000;
    long low = tu_parked_pixels(&c, "users=100", &p100),
         high = tu_parked_pixels(&c, "users=1000", &p1000);
    CHECK(p100 > 50 && p1000 > 500, "the loads park: %d and %d virtual threads", p100, p1000);
    CHECK(low > 0 && high > 2 * low, "parked-blue pixels: %ld at 100 users, %ld at 1000", low,
          high);
    ui_canvas_close(&c);
}

/* Counters that define a model's state, for comparing two runs. */
struct tu_state {
    uint64_t events, arrived, completed, failed;
    int32_t alive, parked, queued, nseries;
    simtime now;
};

static struct tu_state tu_state_of(const struct model *m)
{
    return (struct tu_state){m->stats.events, m->stats.arrived, m->stats.completed,
                             ui_failed(m),    m->threads_alive, m->vt_parked,
                             m->queue.len,    m->nseries,       m->now};
}

static int tu_same(const struct tu_state *a, const struct tu_state *b)
{
    return !memcmp(a, b, sizeof *a);
}

static void test_step_and_rewind(void)
{
    struct ui_sim *x = calloc(1, sizeof *x), *fresh = calloc(1, sizeof *fresh);
    char said[200];
    struct ui_pick touched;
    tu_scenario(&x->s, tu_demo);
    fresh->s = x->s;
    ui_sim_reset(x);
    ui_sim_run(x, 300 * MS);
    /* one step is one event of one model */
    int ok = 1;
    for (int i = 0; i < 200; i++) {
        uint64_t before[MODEL_N] = {x->m[0].stats.events, x->m[1].stats.events};
        int k = ui_sim_step(x, said, sizeof said, &touched);
        uint64_t d0 = x->m[0].stats.events - before[0], d1 = x->m[1].stats.events - before[1];
        if (k < 0 || d0 + d1 != 1 || (k == 0 ? d0 : d1) != 1 || strncmp(said, "t=", 2))
            ok = 0;
    }
    CHECK(ok,
          "200 steps: each advanced exactly one event counter by one and was narrated (last: %s)",
          said);
    CHECK(strstr(said, model_names[0]) || strstr(said, model_names[1]),
          "the narration names the model: %s", said);
    /* the next completion */
    uint64_t done = x->m[0].stats.completed + x->m[1].stats.completed;
    ui_sim_next_done(x, said, sizeof said, &touched);
    CHECK(x->m[0].stats.completed + x->m[1].stats.completed == done + 1,
          "shift-right stops at the next completion: %s", said);
    CHECK(strstr(said, "completes") != NULL, "and says so: %s", said);
    /* rewinding re-simulates to the same state as a run that never went back */
    simtime t1 = 700 * MS;
    ui_sim_seek(x, 2 * SEC);
    ui_sim_seek(x, t1);
    ui_sim_reset(fresh);
    ui_sim_run(fresh, t1);
    for (int k = 0; k < MODEL_N; k++) {
        struct tu_state a = tu_state_of(&x->m[k]), b = tu_state_of(&fresh->m[k]);
        CHECK(tu_same(&a, &b),
              "%s after rewinding to 0.7 s: events %" PRIu64 " vs %" PRIu64 ", completed %" PRIu64
              " vs %" PRIu64,
              model_names[k], a.events, b.events, a.completed, b.completed);
        CHECK(a.events > 1000, "%s did simulate (%" PRIu64 " events)", model_names[k], a.events);
    }
    /* steps past t1 and back to t1: the same state again */
    for (int i = 0; i < 50; i++)
        ui_sim_step(x, NULL, 0, NULL);
    ui_sim_seek(x, t1 - 1);
    ui_sim_seek(x, t1);
    for (int k = 0; k < MODEL_N; k++) {
        struct tu_state a = tu_state_of(&x->m[k]), b = tu_state_of(&fresh->m[k]);
        CHECK(tu_same(&a, &b), "%s: stepping on and seeking back gives the same state",
              model_names[k]);
    }
    ui_sim_free(x), ui_sim_free(fresh);
    free(x), free(fresh);
}

/* Frame dumps: one PNG per frame, numbered from 0, in a directory it creates. */
static void test_frames(void)
{
    static const char *const kv[] = {"users=50", "duration=500ms", "warmup=100ms",
                                     "program=call(A)", NULL};
    struct scenario s;
    char dir[] = "/tmp/test_ui-XXXXXX", path[64];
    tu_scenario(&s, kv);
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    snprintf(path, sizeof path, "%s/frames", dir);
    struct ui_options small = {.width = 320, .height = 200};
    CHECK(ui_frames(&s, path, 4, &small) == 0, "ui_frames at 4 fps over 0.5 s");
    int n = 0;
    for (int i = 0; i < 4; i++) {
        char f[96];
        snprintf(f, sizeof f, "%s/frame_%05d.png", path, i);
        struct stat st;
        if (stat(f, &st) == 0 && st.st_size > 100)
            n++;
        remove(f);
    }
    CHECK(n == 3, "frames 0, 1, 2 written for t = 0, 0.25, 0.5 s (found %d)", n);
    rmdir(path), rmdir(dir);
}

/* Odd sizes, the light theme and a missing font: no crash, a clear refusal. */
static void test_sizes_and_font(void)
{
    struct ui_options small = {.width = 480, .height = 300},
                      big = {.width = 2560, .height = 1600, .light = 1};
    struct ui_options nofont = {.font = "/nonexistent/NoSuchFont.ttf"};
    const struct ui_options *opts[] = {&small, &big};
    for (int i = 0; i < 2; i++) {
        struct ui_canvas c;
        struct ui_sim *x = calloc(1, sizeof *x);
        CHECK(ui_canvas_open(&c, opts[i]) == 0, "canvas %dx%d", opts[i]->width, opts[i]->height);
        tu_render(&c, x, tu_demo, SEC);
        CHECK(c.g.nhit > 10, "%dx%d: %d items drawn", opts[i]->width, opts[i]->height, c.g.nhit);
        ui_canvas_close(&c);
        ui_sim_free(x);
        free(x);
    }
    struct ui_canvas c;
    fprintf(stderr, "(a message about a missing font is expected here)\n");
    CHECK(ui_canvas_open(&c, &nofont) < 0, "a missing font is refused, not a crash");
}

/* --font parses only fonts the system installed: the default (root's, under
 * /usr/share/fonts) is read; the same bytes copied outside, a file that is not a font and a
 * font cut short are refused by name before stb_truetype sees them. Truth: the file's
 * place and owner, which the test sets up, not the code's verdict. */
static void test_font_gate(void)
{
    char err[512], dir[] = "/tmp/loomlab-font-XXXXXX", copy[600];
    unsigned char *ttf = ui_font_load(UI_DEFAULT_FONT, err, sizeof err);
    CHECK(ttf != NULL, "the default font is read: %s", ttf ? "" : err);
    free(ttf);
    CHECK(mkdtemp(dir) != NULL, "a scratch directory");
    snprintf(copy, sizeof copy, "%s/DejaVuSansMono.ttf", dir);
    FILE *in = fopen(UI_DEFAULT_FONT, "rb"), *out = fopen(copy, "wb");
    char buf[65536];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    static const struct {
        const char *path, *why;
    } refused[] = {{NULL, "not in the system's font directories"},
                   {"/etc/passwd", "not in the system's font directories"},
                   {"/usr/share/fonts", "not a regular file"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const char *path = refused[i].path ? refused[i].path : copy;
        err[0] = 0;
        ttf = ui_font_load(path, err, sizeof err);
        CHECK(!ttf && strstr(err, refused[i].why), "--font %s refused: %s", path, err);
        free(ttf);
    }
    unlink(copy);
    rmdir(dir);
}

static void tu_window_hung(int sig)
{
    (void)sig;
    static const char msg[] = "test_ui: FAIL: ui_window with a DISPLAY that names no server "
                              "still runs after 20 s (an invisible window)\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(2);
    _exit(1);
}

/* A DISPLAY or WAYLAND_DISPLAY that names no server: SDL falls back to its offscreen
 * driver, whose window nobody sees. ui_window says so at once (UI_NO_WINDOW) instead of
 * running for ever; an alarm turns a hang into a failure. */
static void test_window_without_display(void)
{
    static const char *const env[][2] = {{"DISPLAY", ":99"}, {"WAYLAND_DISPLAY", "nope"}};
    char *display = getenv("DISPLAY") ? strdup(getenv("DISPLAY")) : NULL,
         *wayland = getenv("WAYLAND_DISPLAY") ? strdup(getenv("WAYLAND_DISPLAY")) : NULL;
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        unsetenv("DISPLAY");
        unsetenv("WAYLAND_DISPLAY");
        unsetenv("SDL_VIDEODRIVER");
        setenv(env[i][0], env[i][1], 1);
        struct options o = {.scenario = "scenarios/default.scn"};
        struct ui_options uo = {0};
        const char *paths[] = {"scenarios/default.scn"};
        signal(SIGALRM, tu_window_hung);
        alarm(20);
        int rc = ui_window(paths, 1, 0, sim_load_window, &o, &uo);
        alarm(0);
        CHECK(rc == UI_NO_WINDOW, "%s=%s: no window can be shown, said at once (rc %d)", env[i][0],
              env[i][1], rc);
    }
    unsetenv("DISPLAY");
    unsetenv("WAYLAND_DISPLAY");
    if (display)
        setenv("DISPLAY", display, 1);
    if (wayland)
        setenv("WAYLAND_DISPLAY", wayland, 1);
    free(display);
    free(wayland);
}

/* The status line says paused whenever the clock is stopped: by space, and at
 * the end of the run (where it once still said running). */
static void test_status_paused(void)
{
    static const char *const small[] = {"users=10", "duration=50ms", "warmup=0", NULL};
    struct ui_app *a = calloc(1, sizeof *a);
    tu_scenario(&a->sim.s, small);
    ui_sim_reset(&a->sim);
    a->uo = &tu_opts;
    a->view.speed = 0; /* as fast as possible */
    ui_key_pause(a, 0);
    CHECK(a->view.paused && strstr(a->view.status, "paused"), "space pauses: '%s'", a->view.status);
    ui_key_pause(a, 0);
    CHECK(!a->view.paused && strstr(a->view.status, "running"), "space resumes: '%s'",
          a->view.status);
    for (int i = 0; i < 10000 && !a->view.paused; i++)
        ui_tick(a);
    CHECK(a->view.paused && a->sim.t == a->sim.s.duration && strstr(a->view.status, "paused") &&
              !strstr(a->view.status, "running"),
          "at the end (t=%.3f s) the clock stops and says so: '%s'", (double)a->sim.t / SEC,
          a->view.status);
    ui_sim_free(&a->sim);
    free(a);
}

/* -> and <- are not opposites (one event forward, 100 ms back); the hint line
 * says each as the key table does it, so the two can never disagree. */
static void test_keys_told(void)
{
    char want[64];
    int found = 0;
    for (int k = 0; k < UI_NKEYS; k++)
        if (ui_keys[k].key == SDLK_LEFT && ui_keys[k].shift == 0) {
            snprintf(want, sizeof want, "[<-] %d ms back", ui_keys[k].arg);
            CHECK(strstr(ui_hints, want) != NULL, "the hints say '%s': %s", want, ui_hints);
            found++;
        } else if (ui_keys[k].key == SDLK_RIGHT && ui_keys[k].shift == 0) {
            CHECK(ui_keys[k].fn == ui_key_step && ui_keys[k].arg == 0 &&
                      strstr(ui_hints, "[->] 1 event") && strstr(ui_keys[k].help, "one event"),
                  "-> is one event, and the hints and help say so: %s", ui_hints);
            found++;
        }
    CHECK(found == 2, "both arrows are bound (%d)", found);
}

/* In the light theme, pinned and queued were two oranges a projector merges. Their
 * distance in RGB must be at least that of pinned to running. */
static void test_light_pinned_vs_queued(void)
{
    struct ui_gfx g = {.light = 1};
    SDL_Color p = ui_color(&g, UI_PINNED, 255), q = ui_color(&g, UI_QUEUED, 255);
    double d = sqrt(pow(p.r - q.r, 2) + pow(p.g - q.g, 2) + pow(p.b - q.b, 2));
    CHECK(d >= 120, "light theme: pinned #%02X%02X%02X vs queued #%02X%02X%02X, distance %.0f", p.r,
          p.g, p.b, q.r, q.g, q.b, d);
}

/* Every shipped scenario's name fits the top bar at 1280x800, paused, with the
 * longest clock a shipped run shows (t = 690 s, speed x0.05). */
static void test_title_fits(void)
{
    struct ui_canvas c;
    glob_t gl;
    if (ui_canvas_open(&c, &tu_opts) < 0 || glob("scenarios/*.scn", 0, NULL, &gl) != 0) {
        CHECK(0, "canvas and scenarios");
        return;
    }
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        struct scenario s;
        struct model ms[MODEL_N] = {{.s = &s}, {.s = &s}};
        char err[512];
        scn_defaults(&s);
        if (scn_load(&s, gl.gl_pathv[i], err, sizeof err) < 0) {
            CHECK(0, "%s", err);
            continue;
        }
        struct ui_view v = ui_view_at(690 * SEC);
        float left = ui_top_bar(&c.g, ms, &v, (SDL_FRect){0, 0, (float)c.w, 30});
        CHECK(left >= 0, "%s: '%s' fits the top bar (%.0f px to spare)", gl.gl_pathv[i], s.name,
              left);
    }
    globfree(&gl);
    ui_canvas_close(&c);
}

/* In a fan-out, a parked virtual thread waits for each of its calls: every
 * service's box holds the requests with a call to it in flight (the counters' calls), not
 * only the first service's. */
static void test_fanout_lot(void)
{
    static const char *const fan[] = {"users=300",
                                      "duration=2s",
                                      "warmup=0",
                                      "program=par(A, B, C)",
                                      "service.A.latency=exp(50ms)",
                                      "service.B.latency=exp(50ms)",
                                      "service.C.latency=exp(50ms)",
                                      NULL};
    struct ui_canvas c;
    struct ui_sim *x = tu_open_render(&c, fan, 1 * SEC);
    if (!x)
        return;
    const struct model *v = &x->m[MODEL_VIRTUAL];
    const struct ui_scan *sc = c.g.scan[MODEL_VIRTUAL];
    for (int i = 0; i < v->s->nsvc; i++) {
        long box = sc->svc_first[i + 1] - sc->svc_first[i];
        CHECK(box > 0 && (uint64_t)box == v->svc[i].inflight,
              "service %s: %ld in its box, %" PRIu64 " calls in flight", v->s->svc[i].name, box,
              v->svc[i].inflight);
    }
    ui_canvas_close(&c);
    ui_sim_free(x);
    free(x);
}

/* Carrier c's own run queue's length, read from the virtual model's state (0: it has none). */
static int32_t runq_len(const struct model *m, int32_t c)
{
    return c < m->vt.nrunq ? m->vt.runq[c].len : 0;
}

/* With a run queue per carrier (steal, home) the run-queue box holds every
 * runnable virtual thread (the model's count, not the drawing's), and a carrier's card says
 * how many wait in its own queue. CPU-heavy, so the queues are long at t = 2 s. */
static void test_carrier_queues(void)
{
    static const char *const names[] = {"steal", "home", "fifo"};
    for (int k = 0; k < 3; k++) {
        char policy[48];
        snprintf(policy, sizeof policy, "virtual.scheduler=%s", names[k]);
        const char *const kv[] = {"users=1000",
                                  "duration=3s",
                                  "warmup=1s",
                                  "program=cpu(exp(1ms)) call(A)",
                                  "service.A.latency=50ms",
                                  policy,
                                  NULL};
        struct ui_canvas c;
        struct ui_sim *x = calloc(1, sizeof *x);
        if (ui_canvas_open(&c, &tu_opts) != 0) {
            CHECK(0, "opening a canvas");
            free(x);
            return;
        }
        tu_render(&c, x, kv, 2 * SEC);
        const struct model *m = &x->m[MODEL_VIRTUAL];
        int32_t want = m->backlog.len + m->queue.len, queued = 0;
        for (int32_t t = 0; t < m->nthr; t++)
            queued += m->thr[t].alive ? runq_len(m, t) : 0;
        long n = ui_runq_items(&c.g, m);
        CHECK(n == want + queued && queued == m->vt.queued && (k == 2 || queued > 100),
              "%s: the run-queue box holds %ld, the model %d waiting + %d in carriers' queues",
              names[k], n, want, queued);
        for (int32_t t = 0; t < m->nthr; t++) {
            char lines[7][96], tail[48];
            if (!m->thr[t].alive || !runq_len(m, t))
                continue;
            ui_card_lines(m, (struct ui_pick){MODEL_VIRTUAL, UI_PICK_THREAD, t}, lines, 7);
            snprintf(tail, sizeof tail, ", %d in its run queue", runq_len(m, t));
            CHECK(strstr(lines[1], tail), "%s: C#%u's card \"%s\" says \"%s\"", names[k],
                  m->thr[t].id, lines[1], tail);
        }
        ui_canvas_close(&c);
        ui_sim_free(x);
        free(x);
    }
}

/* Plot geometry (--plot): a logarithmic axis's ticks and pixels against log10 worked here,
 * a linear axis's ticks, and a point drawn at the pixel of its value. */
static void test_plot_axes(void)
{
    /* users 10 .. 10000 span 3 decades: log; padded by (hi/lo)^0.05 at each end */
    CHECK(ui_axis_wants_log(10, 10000) && ui_axis_wants_log(100, 3200) &&
              !ui_axis_wants_log(100, 1000) && !ui_axis_wants_log(0, 1000),
          "log when the values span decades");
    struct ui_axis a = ui_axis_fit(10, 10000, UI_AXIS_LOG, 100, 1100);
    double lo = 10 / pow(1000, 0.05), hi = 10000 * pow(1000, 0.05), t[UI_AXIS_TICKS];
    int n = ui_axis_ticks(&a, t, UI_AXIS_TICKS);
    /* 3.3 decades shown: the powers of ten only, 10 .. 10000 */
    CHECK(n == 4 && t[0] == 10 && t[1] == 100 && t[2] == 1000 && t[3] == 10000,
          "log ticks at the powers of ten: %d ticks, first %g", n, n ? t[0] : 0);
    for (int i = 0; i < n; i++) {
        double want = 100 + (log10(t[i]) - log10(lo)) / (log10(hi) - log10(lo)) * 1000;
        CHECK(fabs(ui_axis_at(&a, t[i]) - want) < 0.01, "tick %g at pixel %.2f, want %.2f", t[i],
              ui_axis_at(&a, t[i]), want);
    }
    /* equal ratios are equal distances on a log axis */
    CHECK(fabs((ui_axis_at(&a, 300) - ui_axis_at(&a, 30)) -
               (ui_axis_at(&a, 1000) - ui_axis_at(&a, 100))) < 0.01,
          "30 -> 300 as long as 100 -> 1000");
    /* 100 .. 3200: under 3 decades, so 1, 2 and 5 times each power of ten inside */
    a = ui_axis_fit(100, 3200, UI_AXIS_LOG, 0, 1000);
    n = ui_axis_ticks(&a, t, UI_AXIS_TICKS);
    CHECK(n == 5 && t[0] == 100 && t[1] == 200 && t[2] == 500 && t[3] == 1000 && t[4] == 2000,
          "ticks 100 200 500 1000 2000 (%d)", n);
    /* linear 0 .. 1290: 5 ticks of 200 wanted, the axis to 1400, ticks 0, 200, ... 1400 */
    a = ui_axis_fit(0, 1290, UI_AXIS_LINEAR, 700, 100);
    n = ui_axis_ticks(&a, t, UI_AXIS_TICKS);
    CHECK(n == 8 && t[0] == 0 && t[7] == 1400 && a.hi == 1400, "linear ticks 0..1400 by 200 (%d)",
          n);
    CHECK(fabs(ui_axis_at(&a, 700) - 400) < 0.01, "700 of 0..1400 is half way up (y %.2f)",
          ui_axis_at(&a, 700));
    char buf[16];
    ui_tick_label(buf, sizeof buf, 2000);
    CHECK(!strcmp(buf, "2k"), "2000 reads 2k (%s)", buf);
    ui_tick_label(buf, sizeof buf, 250);
    CHECK(!strcmp(buf, "250"), "250 reads 250 (%s)", buf);
    /* a point drawn at the pixel of its value: x = 1000 users on a 10..10000 log axis, y = 700
     * of 0..1400, in the running green (Okabe-Ito #009E73) */
    struct ui_canvas c;
    if (ui_canvas_open(&c, &tu_opts) < 0) {
        CHECK(0, "canvas");
        return;
    }
    SDL_FRect r = {40, 40, 600, 500};
    struct ui_chart_frame f = ui_chart_make(&c.g, r, 10, 10000, 0, 1290, NULL, 0);
    double xl = 10 / pow(1000, 0.05), xh = 10000 * pow(1000, 0.05);
    float px = f.plot.x + (float)((log10(1000) - log10(xl)) / (log10(xh) - log10(xl))) * f.plot.w,
          py = f.plot.y + f.plot.h - 700.0f / 1400 * f.plot.h;
    ui_chart_draw_axes(&c.g, &f, "test", "users");
    ui_chart_point(&c.g, &f, 1000, 700, NAN, NAN, UI_RUN);
    ui_flush(&c.g);
    SDL_RenderFlush(c.r);
    CHECK(tu_pixel(&c, px, py) == 0x009E73, "the point's centre at (%.1f, %.1f) is green: %06x", px,
          py, tu_pixel(&c, px, py));
    CHECK(tu_pixel(&c, px + 8, py) != 0x009E73 && tu_pixel(&c, px - 8, py) != 0x009E73,
          "and only there");
    ui_canvas_close(&c);
}

/* Dim pixels along row y from x0 to x1, and how often the row changes between dim and not. */
static int tu_row_dashes(const struct ui_canvas *c, float x0, float x1, float y, long *dim)
{
    uint32_t ink = ui_inks[UI_DIM].dark;
    int changes = 0, was = tu_pixel(c, x0, y) == ink;
    *dim = 0;
    for (float x = x0; x < x1; x++) {
        int is = tu_pixel(c, x, y) == ink;
        *dim += is;
        changes += is != was;
        was = is;
    }
    return changes;
}

/* A sweep plot's bound, where a model runs at it: a wide dash seen either side of the
 * model's line, and the legend's swatch drawn the same way (dashed, in the same ink). */
static void test_bound_line(void)
{
    struct ui_canvas c;
    if (ui_canvas_open(&c, &tu_opts) < 0) {
        CHECK(0, "canvas");
        return;
    }
    float S = c.g.scale;
    SDL_FRect r = {40, 80, 600, 400};
    struct ui_chart_frame f = ui_chart_make(&c.g, r, 10, 10000, 0, 1290, NULL, 0);
    double x[3] = {10, 1000, 10000}, y[3] = {700, 700, 700};
    ui_chart_line(&c.g, &f, x, y, 3, UI_DIM, UI_KEY_BOUND);
    ui_chart_line(&c.g, &f, x, y, 3, UI_TEXT, 0); /* the model's line, over its bound */
    const struct ui_series_key key = {"bound", UI_DIM, UI_KEY_BOUND, 0, 0};
    float ky = 20;
    ui_series_legend(&c.g, 20, &ky, &key, 1, 600);
    ui_flush(&c.g);
    SDL_RenderFlush(c.r);
    float py = ui_axis_at(&f.y, 700), x0 = ui_axis_at(&f.x, 10), x1 = ui_axis_at(&f.x, 10000);
    long above, below, key_dim;
    int dashes = tu_row_dashes(&c, x0, x1, py - 2 * S, &above);
    tu_row_dashes(&c, x0, x1, py + 2 * S, &below);
    CHECK(dashes >= 20 && above > (x1 - x0) / 4 && below > (x1 - x0) / 4,
          "the bound under a line at it shows dashed either side (%d changes, %ld and %ld px)",
          dashes, above, below);
    int key_dashes = tu_row_dashes(&c, 20, 20 + 22 * S, ky + c.g.font[UI_SMALL].line / 2, &key_dim);
    CHECK(key_dashes >= 2 && key_dim > 5 * S, "its legend swatch is dashed too (%d, %ld px)",
          key_dashes, key_dim);
    ui_canvas_close(&c);
}

/* Text on the base layer of c's frame that is cut, off the canvas, or on another string's
 * line within half a character of it: each is a failed check naming `where` and the text.
 * Returns how many. */
static int tu_text_clean(const struct ui_canvas *c, const char *where)
{
    const struct ui_gfx *g = &c->g;
    int bad = 0;
    for (int i = 0; i < g->ntext_base; i++) {
        const struct ui_text_item *a = &g->text[i];
        float gap = g->font[UI_SMALL].adv / 2;
        if (a->cut || a->r.x < 0 || a->r.x + a->r.w > (float)c->w) {
            CHECK(0, "%s: '%s' is %s", where, a->s, a->cut ? "cut to fit" : "off the canvas");
            bad++;
        }
        for (int j = i + 1; j < g->ntext_base; j++) {
            const struct ui_text_item *b = &g->text[j];
            int same_line = a->r.y < b->r.y + b->r.h - 1 && b->r.y < a->r.y + a->r.h - 1;
            int apart = a->r.x + a->r.w + gap <= b->r.x || b->r.x + b->r.w + gap <= a->r.x;
            if (same_line && !apart) {
                CHECK(0, "%s: '%s' and '%s' collide (x %.0f+%.0f, %.0f+%.0f)", where, a->s, b->s,
                      a->r.x, a->r.w, b->r.x, b->r.w);
                bad++;
            }
        }
    }
    return bad;
}

/* The first string drawn this frame (base layer) that contains `want`, or NULL. */
static const struct ui_text_item *tu_text_find(const struct ui_canvas *c, const char *want)
{
    for (int i = 0; i < c->g.ntext_base; i++)
        if (strstr(c->g.text[i].s, want))
            return &c->g.text[i];
    return NULL;
}

/* The words under a service name its connection pool (not "pool 3/4 busy", which
 * reads as the thread pool), and a p50 not known yet says why. */
static void test_window_words(void)
{
    struct ui_canvas c;
    /* the demo's calls take 150 ms: at 50 ms nothing has completed, the warm-up runs to 1 s */
    struct ui_sim *x = tu_open_render(&c, tu_demo, 50 * MS);
    if (!x)
        return;
    int n = 0;
    for (int i = 0; i < c.g.ntext_base; i++)
        n += strstr(c.g.text[i].s, "p50 - (warm-up)") != NULL;
    CHECK(n == MODEL_N, "before the warm-up ends, both panels say 'p50 - (warm-up)' (%d)", n);
    tu_render(&c, x, tu_demo, 2 * SEC);
    CHECK(tu_text_find(&c, "p50 - ") == NULL, "after it, a p50 in both panels");
    const struct ui_text_item *pool = tu_text_find(&c, "connection pool ");
    CHECK(pool != NULL, "a pooled service's line names its connection pool");
    for (int i = 0; i < c.g.ntext_base; i++) {
        const char *t = c.g.text[i].s;
        CHECK(!(strncmp(t, "pool ", 5) == 0 && isdigit((unsigned char)t[5])),
              "'%s': a bare 'pool N/M' reads as the thread pool", t);
    }
    /* a service with a limit shows its permits in use out of the limit */
    const char *const kv[] = {"users=100",
                              "duration=3s",
                              "warmup=1s",
                              "program=call(A)",
                              "service.A.latency=50ms",
                              "service.A.limit=5",
                              "service.A.wait=10ms",
                              NULL};
    tu_render(&c, x, kv, 2 * SEC);
    const struct ui_text_item *lim = tu_text_find(&c, "permits 5/5, ");
    CHECK(lim != NULL && strstr(lim->s, " wait"),
          "a limited service: 'A: N calls, permits 5/5, M wait' (%s)", lim ? lim->s : "none");
    ui_sim_free(x);
    free(x);
    ui_canvas_close(&c);
}

static int tu_inside(SDL_FRect a, SDL_FRect r)
{
    return a.x >= r.x && a.y >= r.y && a.x + a.w <= r.x + r.w && a.y + a.h <= r.y + r.h;
}

/* A run of minutes seen early fills its charts; the axis ends at a round time. */
static void test_chart_span(void)
{
    CHECK(ui_chart_span(690 * SEC, 5 * SEC) == 10 * SEC &&
              ui_chart_span(690 * SEC, 130 * SEC) == 200 * SEC &&
              ui_chart_span(690 * SEC, 300 * SEC) == 690 * SEC &&
              ui_chart_span(20 * SEC, 6 * SEC) == 20 * SEC,
          "spans: 690 s at 5 s -> 10 s, at 130 s -> 200 s, at 300 s -> all; 20 s runs: all");
    int ok = 1;
    for (simtime d = 60 * SEC; d <= 3600 * SEC; d += 97 * SEC)
        for (simtime t = 0; t <= d; t += d / 37) {
            simtime sp = ui_chart_span(d, t);
            ok &= sp >= t && sp <= d && (sp == d || 10 * t < 4 * d);
        }
    CHECK(ok, "the span holds the time shown and never passes the run's end");
    const char *const kv[] = {"users=100",       "duration=600s",          "warmup=1s",
                              "program=call(A)", "service.A.latency=50ms", NULL};
    struct ui_canvas c;
    struct ui_sim *x = tu_open_render(&c, kv, 5 * SEC);
    if (!x)
        return;
    int ends = 0;
    for (int i = 0; i < c.g.ntext_base; i++)
        ends += !strcmp(c.g.text[i].s, "10 s") - !strcmp(c.g.text[i].s, "600 s");
    CHECK(ends == UI_NCHARTS, "a 600 s run at 5 s: every chart ends at 10 s (%d)", ends);
    /* read from the back of a room: each chart labels its value axis at 3 to 5 ticks, 0 at
     * its foot, and its time axis between the ends (1-2-5 steps: 0, 5 and 10 s) */
    struct ui_layout L;
    ui_layout(&c.g, c.w, c.h, &L);
    for (int k = 0; k < UI_NCHARTS; k++) {
        int values = 0, mid = 0;
        float foot = 0;
        for (int i = 0; i < c.g.ntext_base; i++) {
            const struct ui_text_item *it = &c.g.text[i];
            if (!tu_inside(it->r, L.chart[k]))
                continue;
            values += it->s[0] >= '0' && it->s[0] <= '9' && !strchr(it->s, ' ');
            mid += !strcmp(it->s, "5 s");
            if (!strcmp(it->s, "0"))
                foot = it->r.y;
        }
        CHECK(values >= 3 && values <= 5 && mid == 1 && foot > L.chart[k].y + L.chart[k].h / 2,
              "chart %d: %d value labels, 0 in its lower half, a \"5 s\" tick (%d)", k, values,
              mid);
    }
    /* the two models' lines told apart by hue as well as dash: each in its own ink */
    long ink[MODEL_N] = {0};
    for (int k = 0; k < MODEL_N; k++)
        for (int i = 0; i < UI_NCHARTS; i++)
            ink[k] +=
                tu_count(&c, L.chart[i], ui_inks[UI_MODEL_INK + ui_words(&x->m[k])->ink].dark, 1);
    CHECK(ui_words(&x->m[0])->ink != ui_words(&x->m[1])->ink && ink[0] > 50 && ink[1] > 50,
          "each model's chart lines in its own ink (%ld and %ld px)", ink[0], ink[1]);
    ui_sim_free(x);
    free(x);
    ui_canvas_close(&c);
}

/* One meaning per colour. --live's measured line is the measured blue, not the
 * running green of the panels; the window's charts (predictions) hold no state colour. */
static void test_one_colour_per_role(void)
{
    struct ui_canvas c;
    struct ui_sim *x = tu_open_render(&c, tu_demo, 3 * SEC);
    if (!x)
        return;
    struct live_sample v[3] = {{.t = 0.5, .rps = 1000, .p99_ms = 200, .os_threads = 30},
                               {.t = 1.5, .rps = 3000, .p99_ms = 300, .os_threads = 40},
                               {.t = 2.5, .rps = 4000, .p99_ms = 250, .os_threads = 50}};
    struct live lv = {.v = v, .n = 3, .cap = 3};
    struct ui_view view = ui_view_at(x->t);
    view.live = &lv;
    ui_canvas_draw(&c, x->m, &view);
    struct ui_layout L;
    ui_layout(&c.g, c.w, c.h, &L);
    long measured = 0, state = 0;
    for (int i = 0; i < UI_NCHARTS; i++) {
        measured += tu_count(&c, L.chart[i], ui_inks[UI_MEASURED].dark, 1);
        for (int k = 0; k < UI_NLEGEND; k++)
            if (ui_inks[k].dark != ui_inks[UI_IDLE].dark) /* grey is also the axes' neighbour */
                state += tu_count(&c, L.chart[i], ui_inks[k].dark, 1);
    }
    CHECK(measured > 50, "--live's measured lines are drawn in the measured blue (%ld px)",
          measured);
    CHECK(state == 0, "no state colour in the charts (%ld px)", state);
    CHECK(ui_inks[UI_MEASURED].dark == 0x0072B2, "measured: Okabe-Ito blue");
    /* the models' inks: no state's, and apart in lightness (seen without hue, as a
     * colour-blind reader or a grey projector sees them), in both themes */
    for (int th = 0; th < 2; th++) {
        double lum[2];
        for (int k = 0; k < 2; k++) {
            uint32_t v = th ? ui_inks[UI_MODEL_INK + k].light : ui_inks[UI_MODEL_INK + k].dark;
            lum[k] = 0.2126 * pow((v >> 16) / 255.0, 2.2) +
                     0.7152 * pow((v >> 8 & 255) / 255.0, 2.2) +
                     0.0722 * pow((v & 255) / 255.0, 2.2);
            for (int s = 0; s < UI_NLEGEND; s++)
                CHECK(v != (th ? ui_inks[s].light : ui_inks[s].dark), "model ink %d is state %d's",
                      k, s);
        }
        CHECK(fabs(lum[0] - lum[1]) > 0.1,
              "theme %d: the models' inks differ in lightness "
              "(%.2f, %.2f)",
              th, lum[0], lum[1]);
    }
    for (int k = 0; k < UI_NLEGEND; k++)
        CHECK(ui_inks[k].dark != ui_inks[UI_MEASURED].dark &&
                  ui_inks[k].dark != ui_inks[UI_TEXT].dark,
              "state ink %d means nothing else", k);
    ui_sim_free(x);
    free(x);
    ui_canvas_close(&c);
}

/* The value of the Makefile's variable `name` (its continued lines joined) into out. */
static void tu_make_var(const char *name, char *out, size_t len)
{
    FILE *f = fopen("Makefile", "r");
    char line[512];
    size_t nl = strlen(name);
    int in = 0;
    *out = 0;
    while (f && fgets(line, sizeof line, f)) {
        int first = !strncmp(line, name, nl) && (line[nl] == ' ' || line[nl] == '=');
        in |= first;
        if (in) {
            char *eq = strchr(line, '=');
            strncat(out, eq && first ? eq + 1 : line, len - strlen(out) - 1);
            in = strchr(line, '\\') != NULL;
        }
    }
    if (f)
        fclose(f);
}

/* The tutorial's screenshots (the Makefile's TUTORIAL_SHOTS, scenario:time), each as
 * `make tutorial-images` draws it: no text cut, off the canvas or colliding. */
static void test_shots_text(void)
{
    char shots[2048];
    int n = 0;
    tu_make_var("TUTORIAL_SHOTS", shots, sizeof shots);
    struct ui_canvas c;
    if (ui_canvas_open(&c, &tu_opts) < 0) {
        CHECK(0, "canvas");
        return;
    }
    for (char *tok = strtok(shots, " \t\n\\"); tok; tok = strtok(NULL, " \t\n\\")) {
        char *colon = strchr(tok, ':'), path[128], err[512];
        if (!colon)
            continue;
        *colon = 0;
        snprintf(path, sizeof path, "scenarios/%s.scn", tok);
        double at;
        const char *end;
        struct ui_sim *x = calloc(1, sizeof *x);
        struct scn_src src = {path, 0, err, sizeof err};
        scn_defaults(&x->s);
        if (scn_time(&src, colon + 1, &end, &at) < 0 || scn_load(&x->s, path, err, sizeof err) ||
            scn_finish(&x->s, path, err, sizeof err)) {
            CHECK(0, "%s: %s", path, err);
            free(x);
            continue;
        }
        ui_sim_reset(x);
        ui_sim_run(x, (simtime)at);
        struct ui_view v = ui_view_at(x->t);
        ui_canvas_draw(&c, x->m, &v);
        char where[160];
        snprintf(where, sizeof where, "%s at %s", path, colon + 1);
        CHECK(tu_text_clean(&c, where) == 0, "%s: its text is clean", where);
        ui_sim_free(x);
        free(x);
        n++;
    }
    CHECK(n >= 10, "the Makefile's TUTORIAL_SHOTS read (%d shots)", n);
    ui_canvas_close(&c);
}

/* One study picture, name (assets/study/NAME.csv) of server srv, drawn as --validate --plot
 * draws it into c, with the costs make study-images gives it. 0, or -1 after a failed check. */
static int tu_study_draw(struct ui_canvas *c, const char *name, const char *srv,
                         const char *calibration, const char *const *sets, int nsets)
{
    char csv[256], file[128], err[512];
    snprintf(csv, sizeof csv, "assets/study/%s.csv", name);
    snprintf(file, sizeof file, "%s.csv", name);
    if (tl_is_timeline(csv)) {
        struct tl_cell *cell = calloc(TL_MAX_CELLS, sizeof *cell);
        int n = 0, rc = cell && tl_read(csv, cell, &n, err, sizeof err) == 0 ? 0 : -1;
        for (int i = 0; i < n && rc == 0; i++)
            rc = tl_predict(&cell[i], csv, calibration, sets, nsets, err, sizeof err);
        if (rc == 0)
            ui_timeline_draw(c, cell, n, file);
        CHECK(rc == 0, "%s: read and predicted (%s)", csv, rc ? err : "");
        if (cell)
            tl_free(cell, n);
        free(cell);
        return rc;
    }
    int server = !strcmp(srv, "java") ? VS_JAVA : VS_C, n = 0, ns, rc = 0;
    struct val_point *p = NULL;
    struct val_series *sr = calloc(VAL_SERIES_MAX, sizeof *sr);
    if (!sr || val_read_server(csv, server, &p, &n, err, sizeof err) < 0) {
        CHECK(0, "%s: read (%s)", csv, err);
        free(sr);
        return -1;
    }
    long ulo = LONG_MAX, uhi = 0;
    for (int i = 0; i < n; i++)
        ulo = p[i].users < ulo ? p[i].users : ulo, uhi = p[i].users > uhi ? p[i].users : uhi;
    ns = val_series_find(p, n, sr, VAL_SERIES_MAX);
    for (int k = 0; k < ns && rc == 0; k++)
        rc = val_series_predict(&sr[k], p, n, ui_axis_wants_log((double)ulo, (double)uhi), csv,
                                calibration, sets, nsets, err, sizeof err);
    CHECK(rc == 0, "%s: its %d series predicted (%s)", csv, ns, rc ? err : "");
    for (int i = 0; i < n && rc == 0 && ui_fan_wanted(p, n); i++) /* a fan-out's own figures */
        rc = val_simulate(&p[i], csv, calibration, sets, nsets, err, sizeof err);
    CHECK(rc == 0, "%s: its rows predicted (%s)", csv, rc ? err : "");
    if (rc == 0)
        ui_validate_draw(c, p, n, sr, ns, file);
    free(p);
    free(sr);
    return rc;
}

/* A study picture's colours: measurements in the measured blue, and no state ink (the
 * panels' running green, sky blue, ...): those mean a thread's state. A grid (not a
 * timeline) names each series in its legend. Vermillion is also a second configuration's
 * measured ink, and grey the axes' neighbour: not counted. A grid of several configurations
 * (the check off and on) names each "platform, ..." and "virtual, ...". */
static void tu_study_colours(struct ui_canvas *c, const char *name)
{
    ui_flush(&c->g);
    SDL_RenderFlush(c->r);
    SDL_FRect all = {0, 0, (float)c->w, (float)c->h};
    long state = 0, measured = tu_count(c, all, ui_inks[UI_MEASURED].dark, 1);
    for (int k = 0; k < UI_NLEGEND; k++)
        if (k != UI_IDLE && k != UI_FAILED && ui_inks[k].dark != ui_inks[UI_MEASURED2].dark)
            state += tu_count(c, all, ui_inks[k].dark, 1);
    CHECK(measured > 50 && state == 0,
          "%s: measured in the measured blue (%ld px), no state ink (%ld px)", name, measured,
          state);
    if (strstr(name, "timeline"))
        return;
    int named = 0;
    if (!strncmp(name, "fail-", 5)) { /* a series per policy, named in the legend */
        for (int i = 0; i < c->g.ntext; i++)
            named += !strcmp(c->g.text[i].s, "cancel, virtual") +
                     !strcmp(c->g.text[i].s, "wait, virtual");
        CHECK(named == 2, "%s: the legend names the cancel and the wait series (%d)", name, named);
        return;
    }
    int platform = 0, virtual = 0;
    for (int i = 0; i < c->g.ntext; i++) {
        const char *t = c->g.text[i].s;
        platform += !strcmp(t, "platform") || !strncmp(t, "platform, ", 10);
        virtual += !strcmp(t, "virtual") || !strncmp(t, "virtual, ", 9);
    }
    named = (platform > 0) + (virtual > 0);
    CHECK(named == 2 && platform == virtual,
          "%s: the legend names the platform and the virtual series (%d and %d)", name, platform,
          virtual);
}

/* The study's pictures (the Makefile's STUDY_PLOTS, name:server[:calibration]), each from
 * assets/study's committed CSV as `make study-images` draws it: the titles, legends and tick
 * labels are not cut, off the canvas or colliding. A picture with a calibration in
 * assets/study (its own, or its server's) has its costs; the JVM without one has the
 * Makefile's JVM_THREADS. */
static void test_study_plots_text(void)
{
    char plots[1024], jvm[512], *save = NULL;
    const char *sets[8];
    int nsets = 0, n = 0;
    tu_make_var("STUDY_PLOTS", plots, sizeof plots);
    tu_make_var("JVM_THREADS", jvm, sizeof jvm);
    for (char *t = strtok_r(jvm, " \t\n\\", &save); t && nsets < 8;
         t = strtok_r(NULL, " \t\n\\", &save))
        if (strcmp(t, "--set"))
            sets[nsets++] = t;
    save = NULL;
    for (char *tok = strtok_r(plots, " \t\n\\", &save); tok;
         tok = strtok_r(NULL, " \t\n\\", &save)) {
        char *colon = strchr(tok, ':'), ini[128];
        if (!colon)
            continue;
        *colon = 0;
        char *srv = colon + 1, *cal_name = strchr(srv, ':'); /* NAME:SERVER[:CAL] */
        if (cal_name)
            *cal_name++ = 0;
        else
            cal_name = srv;
        snprintf(ini, sizeof ini, "assets/study/%s.ini", cal_name);
        int cal = access(ini, R_OK) == 0, java = !strcmp(srv, "java");
        struct ui_canvas c;
        if (ui_canvas_open(&c, &tu_opts) < 0) {
            CHECK(0, "canvas");
            return;
        }
        if (tu_study_draw(&c, tok, srv, cal ? ini : NULL, cal || !java ? NULL : sets,
                          cal || !java ? 0 : nsets) == 0) {
            c.g.ntext_base = c.g.ntext;
            CHECK(tu_text_clean(&c, tok) == 0, "%s's picture: its text is clean", tok);
            CHECK(c.g.ntext > 20, "%s's picture has its texts (%d)", tok, c.g.ntext);
            tu_study_colours(&c, tok);
        }
        ui_canvas_close(&c);
        n++;
    }
    CHECK(n >= 4, "the Makefile's STUDY_PLOTS read (%d pictures)", n);
}

/* Column col of data row `row` (0: the first) of a results CSV, read by its header here. */
static double tu_csv_value(const char *path, int row, const char *col)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int at = -1, r = -1;
    double v = NAN;
    while (f && fgets(line, sizeof line, f) && isnan(v)) {
        int k = 0;
        for (char *save = NULL, *t = strtok_r(line, ",\n", &save); t;
             t = strtok_r(NULL, ",\n", &save), k++)
            if (r < 0 && !strcmp(t, col))
                at = k;
            else if (r == row && k == at)
                v = strtod(t, NULL);
        r++;
    }
    if (f)
        fclose(f);
    return v;
}

/* The centre of the drawn text s in the left (right = 0) or right half of the canvas, by its
 * prefix (its tick label or category); 0 when there is none. */
static SDL_FPoint tu_text_at(const struct ui_canvas *c, const char *s, int right)
{
    for (int i = 0; i < c->g.ntext; i++) {
        const SDL_FRect *r = &c->g.text[i].r;
        if (!strncmp(c->g.text[i].s, s, strlen(s)) && (r->x > (float)c->w / 2) == right &&
            r->y > 60)
            return (SDL_FPoint){r->x + r->w / 2, r->y + r->h / 2};
    }
    return (SDL_FPoint){0, 0};
}

/* The fan-out under failures' picture (fail-c.csv, as make study-images draws it): in each
 * chart, each row's measured figure (the failed requests' p50, the connection ms per request)
 * as read here from the CSV is a marker of its series' ink (cancel the measured blue, wait the
 * second configuration's vermillion) where the chart's own tick labels 0 and 100 put that
 * value, above the row's category label; not at the other row's value. A grid without
 * failures draws its charts over users as before. */
static void test_fan_plot(void)
{
    static const char *const figs[] = {"failed_p50_ms", "call_ms_per_req"};
    static const char *const rows[] = {"cancel, virtual", "wait, virtual"};
    const uint32_t inks[] = {ui_inks[UI_MEASURED].dark, ui_inks[UI_MEASURED2].dark};
    struct ui_canvas c;
    if (ui_canvas_open(&c, &tu_opts) < 0) {
        CHECK(0, "canvas");
        return;
    }
    if (tu_study_draw(&c, "fail-c", "c", "assets/study/c.ini", NULL, 0) == 0) {
        ui_flush(&c.g);
        SDL_RenderFlush(c.r);
        for (int ch = 0; ch < 2; ch++) {
            SDL_FPoint y0 = tu_text_at(&c, "0", ch), y100 = tu_text_at(&c, "100", ch);
            CHECK(y0.y > y100.y && y100.y > 0, "chart %d: its y labels 0 and 100 drawn", ch);
            for (int i = 0; i < 2; i++) {
                SDL_FPoint x = tu_text_at(&c, rows[i], ch);
                double v = tu_csv_value("assets/study/fail-c.csv", i, figs[ch]),
                       other = tu_csv_value("assets/study/fail-c.csv", 1 - i, figs[ch]);
                float Y = y0.y + (y100.y - y0.y) * (float)(v / 100),
                      Yo = y0.y + (y100.y - y0.y) * (float)(other / 100);
                long at = tu_count(&c, (SDL_FRect){x.x - 6, Y - 6, 12, 12}, inks[i], 1),
                     off = tu_count(&c, (SDL_FRect){x.x - 6, Yo - 6, 12, 12}, inks[i], 1);
                CHECK(x.x > 0 && at >= 12 && off == 0,
                      "%s: %s's measured %g drawn in its ink at (%.0f, %.0f): %ld px, at the "
                      "other row's %g: %ld px",
                      figs[ch], rows[i], v, x.x, Y, at, other, off);
            }
        }
    }
    ui_canvas_close(&c);
    if (ui_canvas_open(&c, &tu_opts) < 0) {
        CHECK(0, "canvas");
        return;
    }
    if (tu_study_draw(&c, "massive-c", "c", "assets/study/c.ini", NULL, 0) == 0) {
        int over_users = 0, by_policy = 0;
        for (int i = 0; i < c.g.ntext; i++) {
            over_users += !strcmp(c.g.text[i].s, "throughput (req/s) against users");
            by_policy += !strcmp(c.g.text[i].s, "on_failure: the fan-out's policy");
        }
        CHECK(over_users == 1 && by_policy == 0,
              "massive-c.csv (no failures): throughput over users (%d), no policy axis (%d)",
              over_users, by_policy);
    }
    ui_canvas_close(&c);
}

int main(void)
{
    test_carrier_queues();
    test_fanout_lot();
    test_title_fits();
    test_status_paused();
    test_keys_told();
    test_light_pinned_vs_queued();
    test_panels_and_text();
    test_pinned_colour();
    test_lot_density();
    test_step_and_rewind();
    test_frames();
    test_sizes_and_font();
    test_font_gate();
    test_window_without_display();
    test_plot_axes();
    test_shots_text();
    test_study_plots_text();
    test_fan_plot();
    test_window_words();
    test_chart_span();
    test_bound_line();
    test_one_colour_per_role();
    return check_done("test_ui");
}

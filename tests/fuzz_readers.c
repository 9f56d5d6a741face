/* fuzz_readers.c: libFuzzer targets for the simulator's two other readers of files people
 * hand it. Built twice by make fuzz: as is, it fuzzes --validate's results CSV (val_read_file)
 * and simulates the first point it accepts; with -DFUZZ_CALIBRATION it fuzzes a calibration
 * file read over the default scenario (scn_read with the list of keys it set), then the
 * cross-key checks. Beyond not crashing, each answer must keep the reader's promises: an
 * error names the file ("fuzz:"), an accepted point is in the ranges val_row checks, the
 * list of calibrated keys stays inside its buffer. */
#define SIM_NO_MAIN
#include "sim.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef FUZZ_CALIBRATION
static void fuzz_one(FILE *f)
{
    static struct scenario s;
    char err[512];
    scn_defaults(&s);
    int rc = scn_read(&s, f, "fuzz", s.calibrated, sizeof s.calibrated, err, sizeof err);
    if (rc == 0)
        rc = scn_finish(&s, "fuzz", err, sizeof err);
    if (rc < 0 && strncmp(err, "fuzz:", 5) != 0)
        abort(); /* every error names where it is */
    if (strnlen(s.calibrated, sizeof s.calibrated) == sizeof s.calibrated)
        abort(); /* the list of keys is cut, not overrun */
}
#else
static void fuzz_one(FILE *f)
{
    struct val_point *p;
    int n;
    char err[512];
    if (val_read_file(f, "fuzz", &p, &n, err, sizeof err) < 0) {
        if (strncmp(err, "fuzz:", 5) != 0 || p != NULL)
            abort();
        return;
    }
    for (int i = 0; i < n; i++)
        if (p[i].users < 1 || p[i].users > 10000000 || p[i].fanout < 1 || p[i].fanout > MAX_STEPS ||
            p[i].delay_ms < 0 || p[i].line < 2 || p[i].auth < AUTH_OFF || p[i].auth >= AUTH_N)
            abort(); /* val_row let a point through out of range */
    /* the first point, small and short enough to keep each input fast */
    if (p[0].users > 500)
        p[0].users = 500;
    if (p[0].delay_ms > 20)
        p[0].delay_ms = 20;
    p[0].conditions[VC_WARMUP] = 0.01;
    p[0].conditions[VC_WINDOW] = 0.05;
    if (val_simulate(&p[0], "fuzz", NULL, NULL, 0, err, sizeof err) < 0 &&
        strncmp(err, "fuzz:", 5) != 0)
        abort();
    free(p);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    fuzz_one(f);
    fclose(f);
    return 0;
}

/* fuzz_sweep.c: libFuzzer target for --sweep KEY=LIST (opt_sweep_parse): a list as written
 * (a,b,c) or a geometric range (a..b*k) with any bytes in it. Beyond not crashing or
 * hanging, every answer keeps the parser's promises: an error says why, a list has 1 to
 * SWEEP_MAX values, each 1 to 31 characters, no two the same. Each value then goes through
 * --set's path over the default scenario (scn_set, scn_finish), as sim_sweep_points does. */
#define SIM_NO_MAIN
#include "sim.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct scenario s;
    char arg[1024], key[64], vals[SWEEP_MAX][32], err[512] = "";
    if (size >= sizeof arg || memchr(data, 0, size)) /* argv holds no NUL */
        return 0;
    memcpy(arg, data, size);
    arg[size] = 0;
    int n = opt_sweep_parse(arg, key, vals, err, sizeof err);
    if (n < 0) {
        if (!err[0])
            abort(); /* an error says why */
        return 0;
    }
    if (n < 1 || n > SWEEP_MAX || !key[0])
        abort();
    for (int i = 0; i < n; i++) {
        size_t len = strnlen(vals[i], 32);
        if (len == 0 || len == 32)
            abort(); /* each value 1 to 31 characters */
        for (int j = 0; j < i; j++)
            if (!strcmp(vals[i], vals[j]))
                abort(); /* a value twice would be a row twice */
        struct scn_src src = {"--sweep", 0, err, sizeof err};
        scn_defaults(&s);
        if (scn_set(&s, key, vals[i], &src) == 0)
            scn_finish(&s, "--sweep", err, sizeof err);
    }
    return 0;
}

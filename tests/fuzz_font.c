/* fuzz_font.c: libFuzzer target for --font: any bytes as a font file. ui_font_check must
 * refuse whatever stb_truetype would misread; a font it accepts is baked as the window bakes
 * it (stbtt_PackFontRanges over printable ASCII, at the window's two sizes). stb_truetype's
 * code is compiled in here, so the sanitizers see its reads and its asserts. Seeds in
 * tests/corpus/font/: two tiny fonts (cmap formats 4 and 12, simple glyphs with on- and
 * off-curve points, a composite with a scale). */
#define STB_TRUETYPE_IMPLEMENTATION
#define SIM_NO_MAIN
#include "sim.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned char bitmap[512 * 512];
    char err[256] = "";
    if (ui_font_check(data, size, err, sizeof err) < 0) {
        if (!err[0])
            abort(); /* a refusal says why */
        return 0;
    }
    stbtt_packedchar ch[UI_NFONTS][UI_NCHARS];
    stbtt_pack_range ranges[UI_NFONTS];
    for (int f = 0; f < UI_NFONTS; f++)
        ranges[f] = (stbtt_pack_range){.font_size = ui_font_px[f],
                                       .first_unicode_codepoint_in_range = UI_FIRST_CHAR,
                                       .num_chars = UI_NCHARS,
                                       .chardata_for_range = ch[f]};
    stbtt_pack_context pc;
    if (stbtt_PackBegin(&pc, bitmap, 512, 512, 0, 1, NULL)) {
        stbtt_PackFontRanges(&pc, data, 0, ranges, UI_NFONTS);
        stbtt_PackEnd(&pc);
    }
    stbtt_fontinfo info;
    int asc, desc, gap;
    if (stbtt_InitFont(&info, data, stbtt_GetFontOffsetForIndex(data, 0)))
        stbtt_GetFontVMetrics(&info, &asc, &desc, &gap);
    return 0;
}

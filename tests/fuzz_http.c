/* fuzz_http.c: libFuzzer target for the aggregator's HTTP parsers. Built twice by make fuzz:
 * as is, it fuzzes http_parse_request (what clients send us); with -DFUZZ_RESPONSE it fuzzes
 * http_parse_final_response (what downstream services answer: interim 1xx answers, then
 * the final one, through http_parse_response). Both parsers are pure functions over
 * a buffer, so AddressSanitizer sees any read past the input. Beyond not crashing, every
 * answer must keep the parser's promises, checked here. */
#define AGG_NO_MAIN
#include "aggregator.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes: a read past the end is a heap overflow ASan reports */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
#ifdef FUZZ_RESPONSE
    struct http_response r;
    long n = http_parse_final_response(buf, size, &r);
    if (n > 0 && ((size_t)n > size || r.body + r.body_len != buf + n || r.status < 200 ||
                  r.status > 999 || http_bare_lf(r.body - r.head_len, r.head_len)))
        abort(); /* a final answer, within the input, its head's lines ended by CRLF */
    if (n < 0 && n != -502)
        abort(); /* any unusable answer is a 502 */
#else
    struct http_request r;
    long n = http_parse_request(buf, size, &r);
    if (n > 0 && ((size_t)n > size || r.head_len + r.body_len != (size_t)n || r.method_len == 0 ||
                  r.path[0] != '/' || http_bare_lf(buf, r.head_len)))
        abort();
    if (n < 0 && (-n < 400 || -n > 599))
        abort(); /* refusals are 4xx/5xx statuses */
#endif
    free(buf);
    return 0;
}

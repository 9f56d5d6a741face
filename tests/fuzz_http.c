/* fuzz_http.c: libFuzzer target for the aggregator's HTTP parsers. Built twice by make fuzz:
 * as is, it fuzzes http_parse_request (what clients send us); with -DFUZZ_RESPONSE it fuzzes
 * http_parse_response (what downstream services answer). Both parsers are pure functions over
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
    long n = http_parse_response(buf, size, &r);
    if (n > 0 && ((size_t)n > size || r.head_len + r.body_len != (size_t)n || r.status < 100 ||
                  r.status > 999))
        abort();
    if (n < 0 && n != -502)
        abort(); /* any unusable answer is a 502 */
#else
    struct http_request r;
    long n = http_parse_request(buf, size, &r);
    if (n > 0 && ((size_t)n > size || r.head_len + r.body_len != (size_t)n || r.method_len == 0 ||
                  r.path[0] != '/'))
        abort();
    if (n < 0 && (-n < 400 || -n > 599))
        abort(); /* refusals are 4xx/5xx statuses */
#endif
    free(buf);
    return 0;
}

/* fuzz_jwt.c: libFuzzer target for serve --auth's readers (aggregator.c, II.9): the token's
 * JSON (jwt_parse and the lookups on what it read), base64url (b64url_decode) and a whole
 * token through auth_token. Beyond not crashing, every answer must keep its promises: an
 * object read whole has its members inside the input, a string's span between its quotes, no
 * name twice; a decoded text is the canonical encoding of its bytes (encoded again, it is the
 * input); a token is 200 or 401 and nothing else. The seeds are tests/corpus/jwt/. */
#define AGG_NO_MAIN
#include "aggregator.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_json(const char *buf, size_t size)
{
    struct jwt_json *j = xcalloc(1, sizeof *j);
    if (jwt_parse(j, buf, size) == 0) {
        for (int i = 0; i < j->n; i++) {
            const struct jwt_member *m = &j->m[i];
            if (m->name < buf || m->name + m->name_len > buf + size || m->value < buf ||
                m->value + m->value_len > buf + size || !m->value_len)
                abort(); /* a span outside the input */
            if (m->type == JWT_STRING &&
                (m->value[0] != '"' || m->value[m->value_len - 1] != '"' || m->value_len < 2))
                abort(); /* a string's span is its quotes and what is between */
            for (int k = 0; k < i; k++)
                if (jwt_same(m->name, m->name_len, j->m[k].name, j->m[k].name_len))
                    abort(); /* a duplicate name read */
        }
        double v;
        (void)jwt_num(jwt_get(j, "exp"), &v);
        (void)jwt_holds(jwt_get(j, "aud"), "aggregate");
        (void)jwt_is(jwt_get(j, "alg"), "HS256");
    }
    free(j);
}

static void fuzz_b64(const char *buf, size_t size)
{
    unsigned char *out = xmalloc(size + 1);
    long n = b64url_decode(buf, size, out);
    if (n >= 0) {
        struct sbuf again = {0};
        b64url_encode(&again, out, (size_t)n);
        if ((size_t)n > size * 3 / 4 || again.len != size || (size && memcmp(again.p, buf, size)))
            abort(); /* decoded, then encoded: not the input */
        sbuf_free(&again);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned char secret[AUTH_MIN_HMAC] = "fuzz_jwt: a key of 32 bytes....";
    static const struct auth hs = {.alg = AUTH_HS256,
                                   .secret = secret,
                                   .secret_len = sizeof secret,
                                   .issuer = "https://idp.lab",
                                   .audience = "aggregate"};
    /* a copy of exactly `size` bytes: a read past the end is a heap overflow ASan reports */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    fuzz_json(buf, size);
    fuzz_b64(buf, size);
    int st = size <= AUTH_MAX_TOKEN ? auth_token(&hs, buf, size, 1e9) : 401;
    if (st != 200 && st != 401)
        abort();
    free(buf);
    return 0;
}

# expect_eval.awk: the first-principles figure of a scenario's "# expect:" line, computed
# apart from the simulator (tests/test_cli.sh calls it). Usage:
#   awk -f tests/expect_eval.awk -v expr='closed(1000, 3 * lnmean(50, 80), 2, 0.207) * 1000'
# prints the value. The expression has numbers, + - * / and parentheses, and:
#   lnmean(p50, p99)    the mean of a lognormal given by its median and p99 (as the
#                       scenarios give it): p50 exp(s^2 / 2), s = ln(p99 / p50) / z(0.99)
#   emax(k, p50, p99)   the mean of the largest of k such lognormals, by integration:
#                       E[max] = integral over x > 0 of 1 - F(x)^k (a par() waits for it)
#   closed(n, t, c, d)  the throughput (per unit of t and d) of the closed network of n
#                       customers, a delay station of mean t (think time and calls: any
#                       distribution, BCMP) and a station of c servers, each visit FCFS with
#                       exponential demand d in all: the product form, computed exactly over
#                       the c-server station's queue lengths j = 0..n, in logarithms
#                       p(j) ~ t^(n-j) / (n-j)! * d^j / prod(min(i, c), i = 1..j)
#                       X = sum p(j) min(j, c) / d
# An error prints "expect_eval: ..." on stderr and exits 1.

function fail(msg) { print "expect_eval: " msg " in '" expr "'" > "/dev/stderr"; exit 1 }

# Tokens: numbers, names, ( ) , + - * /
function lex(s,    n, c, t) {
    n = 0
    while (length(s) > 0) {
        c = substr(s, 1, 1)
        if (c == " ") { s = substr(s, 2); continue }
        if (match(s, /^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?/) || match(s, /^\.[0-9]+/)) {
            tok[++n] = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1); continue
        }
        if (match(s, /^[a-z_]+/)) { tok[++n] = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1); continue }
        if (index("()+-*/,", c)) { tok[++n] = c; s = substr(s, 2); continue }
        fail("unexpected '" c "'")
    }
    ntok = n; pos = 1
}
function peek() { return pos <= ntok ? tok[pos] : "" }
function take(want) { if (peek() != want) fail("expected '" want "'"); pos++ }

function expression(    v, op) {
    v = term()
    while ((op = peek()) == "+" || op == "-") { pos++; v = op == "+" ? v + term() : v - term() }
    return v
}
function term(    v, op, r) {
    v = factor()
    while ((op = peek()) == "*" || op == "/") {
        pos++; r = factor()
        if (op == "/" && r == 0) fail("division by zero")
        v = op == "*" ? v * r : v / r
    }
    return v
}
function factor(    t, name, a, n, av) {
    t = peek()
    if (t == "") fail("unexpected end")
    if (t == "-") { pos++; return -factor() }
    if (t == "(") { pos++; a = expression(); take(")"); return a }
    if (t ~ /^[0-9.]/) { pos++; return t + 0 }
    if (t ~ /^[a-z_]+$/) {
        name = t; pos++; take("(")
        n = 0; av[++n] = expression() # a local array: an argument may itself call
        while (peek() == ",") { pos++; av[++n] = expression() }
        take(")")
        return call(name, n, av)
    }
    fail("unexpected '" t "'")
}
function call(name, n, av,    a1, a2, a3, a4) {
    a1 = av[1]; a2 = av[2]; a3 = av[3]; a4 = av[4]
    if (name == "lnmean" && n == 2) return lnmean(a1, a2)
    if (name == "emax" && n == 3) return emax(a1, a2, a3)
    if (name == "closed" && n == 4) return closed(a1, a2, a3, a4)
    fail("unknown function " name " of " n " arguments")
}

function sigma(p50, p99) {
    if (!(p50 > 0 && p99 >= p50)) fail("want 0 < p50 <= p99")
    return log(p99 / p50) / 2.3263478740408408
}
function lnmean(p50, p99,    s) { s = sigma(p50, p99); return p50 * exp(s * s / 2) }

# The complementary error function, to 1.2e-7 relative (Numerical Recipes' erfcc).
function erfc(x,    z, t, r) {
    z = x < 0 ? -x : x
    t = 1 / (1 + 0.5 * z)
    r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + \
        t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + \
        t * (-0.82215223 + t * 0.17087277)))))))))
    return x >= 0 ? r : 2 - r
}
function lncdf(x, mu, s) { return x <= 0 ? 0 : 0.5 * erfc(-(log(x) - mu) / (s * sqrt(2))) }

# Simpson's rule over [0, p50 e^(9 s)], beyond which F^k differs from 1 by < 1e-18.
function emax(k, p50, p99,    s, mu, hi, n, h, i, x, w, sum) {
    if (k < 1 || k != int(k)) fail("emax wants a whole k >= 1")
    s = sigma(p50, p99); mu = log(p50)
    if (s == 0) return p50
    hi = p50 * exp(9 * s); n = 20000; h = hi / n; sum = 0
    for (i = 0; i <= n; i++) {
        x = i * h
        w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2)
        sum += w * (1 - lncdf(x, mu, s) ^ k)
    }
    return sum * h / 3
}

function closed(n, t, c, d,    j, lw, lf, acc, m, sum, num, w) {
    if (n < 1 || n != int(n) || c < 1 || c != int(c) || !(t > 0) || !(d > 0))
        fail("closed wants n, c whole >= 1 and t, d > 0")
    lf[0] = 0
    for (j = 1; j <= n; j++) lf[j] = lf[j - 1] + log(j)
    acc = 0; m = -1e308
    for (j = 0; j <= n; j++) {
        if (j > 0) acc += log(j < c ? j : c)
        lw[j] = (n - j) * log(t) - lf[n - j] + j * log(d) - acc
        if (lw[j] > m) m = lw[j]
    }
    sum = 0; num = 0
    for (j = 0; j <= n; j++) {
        w = exp(lw[j] - m); sum += w; num += w * (j < c ? j : c)
    }
    return num / sum / d
}

BEGIN {
    if (expr == "") fail("no expression")
    lex(expr)
    v = expression()
    if (pos <= ntok) fail("unexpected '" peek() "'")
    printf "%.10g\n", v
}

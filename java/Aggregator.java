/*
 * Aggregator.java: the /aggregate service of aggregator.c, on the real JVM and embedded Tomcat.
 *
 * Loom Lab's C aggregator imitates two execution models; this file is the thing it imitates,
 * so that the same load generator can be pointed at both. For each GET /aggregate the server
 * calls K downstream services (GET /item/0 .. /item/K-1 on the backends, round-robin) and
 * answers their bodies as a JSON array, exactly like `./aggregator serve`.
 *
 *   JAVA=$(java/find-jdk); CP=$(java/find-jdk --classpath)
 *   ./aggregator backend --port 9100 --delay-ms 50
 *   $JAVA -cp "$CP" java/Aggregator.java --mode virtual --port 9101 --backends 127.0.0.1:9100
 *   ./aggregator load --url http://127.0.0.1:9101/aggregate --users 1000 --duration 10
 *
 * (or compile once: javac -cp "$CP" -d build/java java/Aggregator.java, then
 *  $JAVA -cp "build/java:$CP" Aggregator --mode ...; a leading `serve` is accepted too.
 *  `Aggregator drip --port P` is a backend that drips its answers, for the deadline's test;
 *  `Aggregator time-auth` times the token check for `aggregator calibrate --server java`.)
 *
 * The two models are two configurations of one Tomcat connector (NIO):
 *   platform (1:1)  Tomcat's own pool: a request holds a pool thread for its whole life,
 *                   blocked in the downstream reads, so at most --threads (maxThreads)
 *                   requests are in progress: throughput <= threads / (K * D).
 *   virtual (M:N)   one virtual thread per request, as Spring Boot configures Tomcat with
 *                   spring.threads.virtual.enabled=true: the protocol's executor is Tomcat's
 *                   VirtualThreadExecutor. A blocking read parks the virtual thread and frees
 *                   its carrier, so concurrency is bounded by memory, not by threads.
 * The downstream client is the JDK's: HttpURLConnection (default; its keep-alive cache is the
 * connection pool) or java.net.http.HttpClient (--client httpclient).
 *
 * The fan-out (?parallel=1) is structured: with --on-failure cancel (the default) the K calls
 * are the subtasks of JDK 25's StructuredTaskScope.open() (JEP 505, a preview API), and the
 * first call that fails cancels its siblings (interrupted, their exchanges aborted) and the
 * request answers at once; with --on-failure wait every call runs to its end, then a failure
 * answers. The scope needs JDK 25 and --enable-preview (the single-file launcher also wants
 * --source 25 then):
 *   $JAVA --enable-preview --source 25 -cp "$CP" java/Aggregator.java --backends ...
 * On another JDK, or without --enable-preview, an explicit --on-failure cancel refuses to
 * start (one line, exit 2), and the default joins all instead, saying so once at start.
 *
 * With --auth hs256:KEYFILE or rs256:PUBKEY.pem, /aggregate wants a bearer JWT signed so
 * (BearerAuth: the JDK's javax.crypto and java.security, the algorithm fixed by the flag).
 *
 * The file reads top to bottom: command line, metrics, downstream clients, the structured
 * fan-out, bearer tokens, the servlet (the /aggregate handler), Tomcat for each model, a
 * dripping backend for the tests, main. No framework beyond embedded Tomcat.
 * Every Tomcat or JDK setting says, next to it, which simulator key (sim.c) it corresponds to.
 */
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.management.ManagementFactory;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.catalina.AccessLog;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleState;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.startup.Tomcat;
import org.apache.catalina.valves.ErrorReportValve;
import org.apache.catalina.valves.ValveBase;
import org.apache.coyote.http11.Http11NioProtocol;
import org.apache.tomcat.util.threads.ThreadPoolExecutor;
import org.apache.tomcat.util.threads.VirtualThreadExecutor;

public final class Aggregator {

    /* ==== Command line ==== */

    static final String SYNOPSIS = "Aggregator [serve] --mode platform|virtual --port P"
            + " --backends HOST:PORT[,HOST:PORT...] [--threads T] [--client urlconnection|httpclient]"
            + " [--no-pool [--close-first client|server]] [--pin [synchronized|native]]"
            + " [--permits N [--permit-wait-ms W]] [--fanout K] [--on-failure cancel|wait] [...]";

    /** Everything the command line sets; read-only once serving. Defaults as in aggregator.c. */
    static final class Config {
        boolean virtual = true;             // --mode; the C server's default is virtual too
        int port = 0;                       // 0: any free port (printed)
        List<InetSocketAddress> backends = new ArrayList<>();
        int fanout = 3;                     // K: the program's call(...)s; ?parallel=1 is par(A,B,C)
        int threads = 200;                  // platform.max_threads     (Tomcat maxThreads)
        int minSpare = 10;                  // platform.min_spare       (Tomcat minSpareThreads)
        int maxConnections = 8192;          // platform.max_connections (Tomcat maxConnections)
        int acceptCount = 100;              // platform.accept_count    (Tomcat acceptCount)
        int maxQueue = 0;                   // platform.max_queue       (Tomcat maxQueueSize; 0: unbounded)
        int threadIdleMs = 60000;           // platform.idle_timeout    (Tomcat threadsMaxIdleTime)
        int carriers = 0;                   // virtual.parallelism      (0: one per CPU, the JDK's default)
        boolean pool = true;                // service.NAME.pool (--no-pool: 0, a connection per call)
        boolean serverClosesFirst = false;  // net.close_first = server (--close-first; default client)
        Pin pin = Pin.NONE;                 // the program's sync { ... } around the calls
        boolean cancelOnFailure = true;     // --on-failure: cancel (a StructuredTaskScope) or wait
        boolean onFailureGiven = false;     // said on the command line (then it must be honoured)
        BearerAuth auth;                    // --auth: a JWT on /aggregate (null: anyone may call)
        int permits = 0;                    // service.NAME.limit (--permits; 0: no limit), with
                                            // service.NAME.wait = --permit-wait-ms (0: shed at once)
        int permitWaitMs = 0;               // the limit's queue timeout (--permit-wait-ms), then 503
        int timeoutMs = 5000;               // service.NAME.timeout (one budget for the K calls), then 504
        int idleMs = 20000;                 // keep-alive idle timeout of client connections
        boolean httpClient = false;         // --client httpclient (else HttpURLConnection)
        boolean clientOwnPool = false;      // --client httpclient-default: HttpClient keeps its
                                            // default executor, a cached pool of platform threads
    }

    /**
     * What --pin wraps around a request's downstream calls, for a virtual thread to block in.
     *   SYNCHRONIZED  a monitor held across the calls: pins the carrier on JDK 21-23; JDK 24+
     *                 (JEP 491) unmounts the virtual thread anyway (virtual.jep491 = 1).
     *   NATIVE        the calls made from inside a C function: libc's qsort, called through
     *                 the FFM API, calls back into Java (an upcall) and the calls run there. A
     *                 virtual thread with a native frame on its stack cannot unmount, on every
     *                 JDK so far (virtual.jep491 = 0 for this one).
     */
    enum Pin { NONE, SYNCHRONIZED, NATIVE }

    /** A bad command line: main prints the message on one line and exits 2. */
    static final class UsageError extends Exception {
        private static final long serialVersionUID = 1L;

        UsageError(String message) { super(message); }
    }

    static final String[][] FLAGS = {
        {"--mode", "platform (Tomcat's pool, 1:1) or virtual (virtual-thread executor, M:N); default virtual"},
        {"--port", "port to bind on 127.0.0.1; default 0 (any free port, printed)"},
        {"--backends", "downstream services HOST:PORT[,...]; required"},
        {"--fanout", "K, downstream calls per /aggregate; default 3"},
        {"--threads", "platform: most pool threads (maxThreads); default 200"},
        {"--min-spare", "platform: threads kept up front (minSpareThreads); default 10"},
        {"--max-connections", "connections held at most, both modes (maxConnections); default 8192"},
        {"--accept-count", "listen backlog (acceptCount); default 100"},
        {"--max-queue", "platform: queued requests before refusal (maxQueueSize); default 0 = unbounded"},
        {"--thread-idle-ms", "platform: idle pool threads exit, down to --min-spare; default 60000"},
        {"--carriers", "virtual: carrier threads (jdk.virtualThreadScheduler.parallelism); default one per CPU"},
        {"--client", "downstream client: urlconnection (HttpURLConnection), httpclient (its tasks on virtual"
            + " threads in virtual mode) or httpclient-default (its own platform-thread pool, the pitfall);"
            + " default urlconnection"},
        {"--no-pool", "a new downstream connection per call (no keep-alive)"},
        {"--close-first", "with --no-pool, who closes each connection first, so holds its TIME_WAIT: client"
            + " (this server, on its ephemeral port) or server (Connection: close; the backend); default client"},
        {"--pin", "[synchronized|native] the downstream calls inside synchronized (pins before JDK 24) or"
            + " inside a native frame (qsort's upcall via FFM, JDK 22+: pins on JDK 24+ too); default synchronized"},
        {"--permits", "at most N downstream calls at once (a Semaphore); default 0 = no limit"},
        {"--permit-wait-ms", "with --permits, the longest wait for a permit, then 503 (load shedding); default 0"},
        {"--timeout-ms", "downstream budget per /aggregate, then 504; default 5000"},
        {"--auth", "hs256:KEYFILE (a raw secret) or rs256:PUBKEY.pem: /aggregate wants a bearer JWT so signed;"
            + " default none"},
        {"--auth-issuer", "with --auth, the token's iss must be this"},
        {"--auth-audience", "with --auth, the token's aud must be or contain this"},
        {"--on-failure", "?parallel=1 when a call fails: cancel (its siblings, in a StructuredTaskScope: JDK 25"
            + " with --enable-preview) or wait (join all, then answer); default cancel"},
        {"--idle-ms", "keep-alive idle timeout (keepAliveTimeout); default 20000"},
    };

    static void printUsage() {
        System.out.println("usage: " + SYNOPSIS);
        for (String[] f : FLAGS) System.out.printf("  %-18s %s%n", f[0], f[1]);
        System.out.printf("  %-18s %s%n", "--help", "print this help");
        System.out.println("   or: Aggregator drip --port P [--every-ms MS]  (a backend dripping its bodies, for tests)");
    }

    /** Parse the flags (same names and checks as `aggregator serve`); null means --help. */
    static Config parseArgs(String[] args) throws UsageError {
        Config c = new Config();
        String mode = "virtual", client = "urlconnection", backends = null, closeFirst = null;
        String auth = null, issuer = null, audience = null;
        int first = args.length > 0 && args[0].equals("serve") ? 1 : 0;
        for (int a = first; a < args.length; a++) {
            String flag = args[a];
            switch (flag) {
                case "--help", "-h" -> { return null; }
                case "--no-pool" -> { c.pool = false; continue; }
                case "--pin" -> { // an optional value, so that a bare --pin means what it always did
                    boolean valued = a + 1 < args.length && !args[a + 1].startsWith("--");
                    c.pin = pinVariant(valued ? args[++a] : "synchronized");
                    continue;
                }
                default -> { }
            }
            if (a + 1 >= args.length) {
                boolean known = Stream.of(FLAGS).anyMatch(f -> f[0].equals(flag));
                throw new UsageError(known ? "flag " + flag + " needs a value" : "unknown flag '" + flag + "'");
            }
            String v = args[++a];
            switch (flag) {
                case "--mode" -> mode = v;
                case "--client" -> client = v;
                case "--backends" -> backends = v;
                case "--port" -> c.port = number(v);
                case "--fanout" -> c.fanout = number(v);
                case "--threads" -> c.threads = number(v);
                case "--min-spare" -> c.minSpare = number(v);
                case "--max-connections" -> c.maxConnections = number(v);
                case "--accept-count" -> c.acceptCount = number(v);
                case "--max-queue" -> c.maxQueue = number(v);
                case "--thread-idle-ms" -> c.threadIdleMs = number(v);
                case "--carriers" -> c.carriers = number(v);
                case "--timeout-ms" -> c.timeoutMs = number(v);
                case "--idle-ms" -> c.idleMs = number(v);
                case "--close-first" -> closeFirst = v;
                case "--permits" -> c.permits = number(v);
                case "--permit-wait-ms" -> c.permitWaitMs = number(v);
                case "--auth" -> auth = v;
                case "--auth-issuer" -> issuer = v;
                case "--auth-audience" -> audience = v;
                case "--on-failure" -> {
                    if (!v.equals("cancel") && !v.equals("wait"))
                        throw new UsageError("--on-failure must be cancel or wait, not '" + v + "'");
                    c.cancelOnFailure = v.equals("cancel");
                    c.onFailureGiven = true;
                }
                default -> throw new UsageError("unknown flag '" + flag + "'");
            }
        }
        switch (mode) {
            case "platform" -> c.virtual = false;
            case "virtual" -> c.virtual = true;
            default -> throw new UsageError("--mode must be platform or virtual, not '" + mode + "'");
        }
        switch (client) {
            case "urlconnection" -> c.httpClient = false;
            case "httpclient" -> c.httpClient = true;
            case "httpclient-default" -> {
                c.httpClient = true;
                c.clientOwnPool = true;
            }
            default -> throw new UsageError(
                    "--client must be urlconnection, httpclient or httpclient-default, not '" + client + "'");
        }
        if (backends == null) throw new UsageError("--backends needs HOST:PORT[,HOST:PORT...]");
        for (String hp : backends.split(",", -1)) c.backends.add(hostPort(hp));
        if (c.fanout < 1 || c.threads < 1 || c.maxConnections < 1)
            throw new UsageError("--fanout, --threads and --max-connections must be >= 1");
        if (c.port > 65535) throw new UsageError("--port must be 0..65535, not " + c.port);
        if (c.timeoutMs < 1) throw new UsageError("--timeout-ms must be >= 1");
        if (closeFirst != null) {
            if (c.pool) throw new UsageError("--close-first needs --no-pool (a pooled connection stays open)");
            if (!closeFirst.equals("client") && !closeFirst.equals("server"))
                throw new UsageError("--close-first must be client or server, not '" + closeFirst + "'");
            c.serverClosesFirst = closeFirst.equals("server");
            if (c.httpClient && !c.serverClosesFirst)
                throw new UsageError("--close-first client needs --client urlconnection (HttpClient sends Connection: close)");
        }
        if (c.httpClient && !c.pool) c.serverClosesFirst = true; // what HttpClient does
        if (c.permitWaitMs > 0 && c.permits == 0) throw new UsageError("--permit-wait-ms needs --permits N");
        if (c.pin == Pin.NATIVE && Runtime.version().feature() < 22)
            throw new UsageError("--pin native needs JDK 22+ (the FFM API); on JDK "
                    + Runtime.version().feature() + " --pin synchronized pins");
        if (auth != null) c.auth = new BearerAuth(auth, issuer, audience);
        else if (issuer != null || audience != null) throw new UsageError("--auth-issuer and --auth-audience need --auth");
        if (c.cancelOnFailure && c.onFailureGiven && ScopedFanout.JDK == null)
            throw new UsageError("--on-failure cancel needs JDK 25's StructuredTaskScope, run with"
                    + " --enable-preview (this is JDK " + Runtime.version().feature() + ")");
        return c;
    }

    static Pin pinVariant(String v) throws UsageError {
        return switch (v) {
            case "synchronized" -> Pin.SYNCHRONIZED;
            case "native" -> Pin.NATIVE;
            default -> throw new UsageError("--pin must be synchronized or native, not '" + v + "'");
        };
    }

    /** A non-negative int, as the C server's OPT_INT. */
    static int number(String v) throws UsageError {
        try {
            int x = Integer.parseInt(v);
            if (x >= 0 && !v.startsWith("+")) return x;
        } catch (NumberFormatException e) {
            // fall through to the message
        }
        throw new UsageError("bad number '" + v + "'");
    }

    /** "HOST:PORT" with HOST a dotted IPv4 address or localhost, as parse_hostport in C. */
    static InetSocketAddress hostPort(String s) throws UsageError {
        UsageError bad = new UsageError("--backends needs HOST:PORT[,HOST:PORT...], not '" + s + "'");
        int colon = s.lastIndexOf(':');
        if (colon <= 0) throw bad;
        String host = s.substring(0, colon);
        if (host.equals("localhost")) host = "127.0.0.1";
        if (!host.matches("(\\d{1,3}\\.){3}\\d{1,3}")) throw bad;
        int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw bad;
        }
        if (port < 1 || port > 65535) throw bad;
        try {
            return new InetSocketAddress(InetAddress.getByName(host), port); // numeric: no DNS lookup
        } catch (IOException e) {
            throw bad;
        }
    }

    /* ==== Metrics ==== */

    /** Statuses with their own counter, as in aggregator.c's HTTP_STATUSES; the rest is "other". */
    static final int[] STATUSES = {200, 400, 401, 404, 405, 413, 414, 431, 501, 502, 503, 504, 505};
    static final String[] REASONS = {"OK", "Bad Request", "Unauthorized", "Not Found", "Method Not Allowed", "Content Too Large",
        "URI Too Long", "Request Header Fields Too Large", "Not Implemented", "Bad Gateway", "Service Unavailable",
        "Gateway Timeout", "HTTP Version Not Supported"};
    /** Latency histogram bounds, ms (the page prints seconds), as metrics_le_ms in C. */
    static final double[] LE_MS = {1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8, 10, 12.5, 16, 20, 25, 31.5, 40,
        50, 63, 80, 100, 125, 160, 200, 250, 315, 400, 500, 630, 800, 1000, 1250, 1600, 2000, 2500, 3150,
        4000, 5000, 6300, 8000, 10000};

    static String reason(int status) {
        for (int i = 0; i < STATUSES.length; i++) if (STATUSES[i] == status) return REASONS[i];
        return "Unknown";
    }

    /**
     * Process-wide counters and the Prometheus page, with the metric names of aggregator.c.
     * Requests are counted by an access-log valve (below), so that Tomcat's own answers to
     * malformed requests (400, 505...) are counted too, not only what the servlet answers.
     */
    static final class Metrics {
        final AtomicLongArray requests = new AtomicLongArray(STATUSES.length + 1); // last: other
        final AtomicLongArray latencyLe = new AtomicLongArray(LE_MS.length + 1);   // last: +Inf
        final LongAdder latencySumMicros = new LongAdder();
        final LongAdder downstreamCalls = new LongAdder();
        final AtomicLongArray failures = new AtomicLongArray(Failure.values().length);
        final AtomicBoolean noPortSeen = new AtomicBoolean();
        final LongAdder requestsNoPort = new LongAdder(); // requests a no_port call failed, once each
        final LongAdder heldMicros = new LongAdder();     // µs downstream calls held a connection
        final LongAdder shed = new LongAdder();
        final LongAdder cancelled = new LongAdder();
        java.util.concurrent.Semaphore permits; // set when --permits limits the calls
        final LongAdder vthreadsStarted = new LongAdder();
        final AtomicLong vthreadsAlive = new AtomicLong();
        Http11NioProtocol protocol;          // set once Tomcat is configured

        void request(int status, long nanos) {
            int i = 0;
            while (i < STATUSES.length && STATUSES[i] != status) i++;
            requests.incrementAndGet(i);
            int b = 0;
            while (b < LE_MS.length && nanos > LE_MS[b] * 1e6) b++;
            latencyLe.incrementAndGet(b);
            latencySumMicros.add(nanos / 1000);
        }

        /**
         * A downstream call that failed, by why. The first port exhaustion is also written to
         * the log as the JDK says it, once: the symptom a reader should learn to recognise.
         */
        void failed(Failure why, Throwable cause) {
            failures.incrementAndGet(why.ordinal());
            if (why == Failure.NO_PORT && !noPortSeen.getAndSet(true))
                System.err.println("aggregator serve: downstream connect failed: " + cause
                        + " (no ephemeral port left; counted as reason=\"no_port\" from now on)");
        }

        /**
         * Wrap a task so that it counts as a virtual thread while it runs. The counts move
         * inside the run, not at the wrap: StructuredTaskScope.fork makes its thread through
         * the factory and then may find the scope cancelled by a failed sibling, and that
         * thread never starts (its finally would never run).
         */
        Runnable countedVirtual(Runnable task) {
            return () -> {
                vthreadsStarted.increment();
                vthreadsAlive.incrementAndGet();
                try {
                    task.run();
                } finally {
                    vthreadsAlive.decrementAndGet();
                }
            };
        }

        /** A counted virtual thread, not started yet (the fan-out scope's thread factory). */
        Thread unstartedVirtual(Runnable task) {
            return Thread.ofVirtual().name("agg-virtual").unstarted(countedVirtual(task));
        }

        /** Start a counted virtual thread (fan-out calls, HttpClient's tasks). */
        Thread startVirtual(Runnable task) {
            return Thread.ofVirtual().name("agg-virtual").start(countedVirtual(task));
        }

        /** The Prometheus text exposition format (version 0.0.4). */
        String page() {
            StringBuilder b = new StringBuilder(4096);
            b.append("# HELP agg_requests_total Requests answered, by status.\n# TYPE agg_requests_total counter\n");
            for (int i = 0; i <= STATUSES.length; i++)
                b.append("agg_requests_total{status=\"").append(i < STATUSES.length ? String.valueOf(STATUSES[i]) : "other")
                        .append("\"} ").append(requests.get(i)).append('\n');
            b.append("# HELP agg_request_seconds Server-side latency.\n# TYPE agg_request_seconds histogram\n");
            long cumulated = 0;
            for (int i = 0; i < LE_MS.length; i++) {
                cumulated += latencyLe.get(i);
                b.append("agg_request_seconds_bucket{le=\"").append(trim(LE_MS[i] / 1000)).append("\"} ")
                        .append(cumulated).append('\n');
            }
            cumulated += latencyLe.get(LE_MS.length);
            b.append("agg_request_seconds_bucket{le=\"+Inf\"} ").append(cumulated).append('\n');
            b.append(String.format(Locale.ROOT, "agg_request_seconds_sum %.6f%n", latencySumMicros.sum() / 1e6));
            b.append("agg_request_seconds_count ").append(cumulated).append('\n');

            ThreadPoolExecutor pool = protocol != null && protocol.getExecutor() instanceof ThreadPoolExecutor p ? p : null;
            gauge(b, "agg_os_threads", "OS threads of the process", procStatus("Threads:"));
            gauge(b, "agg_rss_bytes", "resident set size", procStatus("VmRSS:") * 1024);
            gauge(b, "agg_open_fds", "open file descriptors", countDir("/proc/self/fd"));
            gauge(b, "agg_tcp_time_wait", "TCP sockets in TIME_WAIT, whole machine", timeWait());
            gauge(b, "agg_connections", "client connections open", protocol != null ? protocol.getConnectionCount() : 0);
            gauge(b, "agg_pool_size", "platform pool threads", pool != null ? pool.getPoolSize() : 0);
            gauge(b, "agg_pool_busy", "platform pool threads serving a request", pool != null ? pool.getActiveCount() : 0);
            gauge(b, "agg_pool_queue", "requests queued for a pool thread", pool != null ? pool.getQueue().size() : 0);
            gauge(b, "agg_vthreads_alive", "virtual threads alive (started by this server)", vthreadsAlive.get());
            gauge(b, "agg_vthreads_started_total", "virtual threads started by this server", vthreadsStarted.sum());
            // The JDK's virtual-thread scheduler, from jdk.management (JDK 24+); absent before.
            gauge(b, "agg_carriers", "carrier threads", scheduler("PoolSize"));
            gauge(b, "agg_carriers_busy", "carriers running a virtual thread", scheduler("MountedVirtualThreadCount"));
            gauge(b, "agg_vthreads_runnable", "virtual threads queued for a carrier", scheduler("QueuedVirtualThreadCount"));
            gauge(b, "agg_downstream_calls_total", "downstream calls", downstreamCalls.sum());
            b.append("# HELP agg_downstream_failures_total Downstream calls failed, by reason.\n")
                    .append("# TYPE agg_downstream_failures_total counter\n");
            for (Failure f : Failure.values())
                b.append("agg_downstream_failures_total{reason=\"").append(f.label).append("\"} ")
                        .append(failures.get(f.ordinal())).append('\n');
            gauge(b, "agg_downstream_cancelled_total", "downstream calls cancelled by their scope (--on-failure cancel)",
                    cancelled.sum());
            gauge(b, "agg_downstream_held_us_total", "microseconds downstream calls held a connection"
                    + " (the exchange, cancelled calls included)", heldMicros.sum());
            gauge(b, "agg_requests_failed_no_port_total", "requests failed because a downstream call found no"
                    + " ephemeral port (once per request, however many of its calls did)", requestsNoPort.sum());
            if (permits != null) {
                gauge(b, "agg_permits_available", "permits for a downstream call free now", permits.availablePermits());
                gauge(b, "agg_shed_total", "downstream calls refused (503) after waiting --permit-wait-ms", shed.sum());
            }
            gauge(b, "agg_alloc_bytes_total", "bytes allocated on the heap since the JVM started", allocatedBytes());
            return b.toString();
        }

        static void gauge(StringBuilder b, String name, String help, long value) {
            if (value < 0) return; // not known on this JDK or kernel: leave the metric out
            b.append("# HELP ").append(name).append(' ').append(help).append(".\n# TYPE ").append(name)
                    .append(name.endsWith("_total") ? " counter\n" : " gauge\n").append(name).append(' ')
                    .append(value).append('\n');
        }

        /**
         * Bytes allocated on the heap by every thread since the JVM started, live or ended (the
         * HotSpot counter per thread, summed by com.sun.management.ThreadMXBean), or -1. A
         * virtual thread allocates in its carrier's TLAB and is counted under its carrier,
         * so this includes the requests' virtual threads, Tomcat's threads and this page.
         */
        static long allocatedBytes() {
            return ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean t
                    && t.isThreadAllocatedMemorySupported() && t.isThreadAllocatedMemoryEnabled()
                    ? t.getTotalThreadAllocatedBytes() : -1;
        }

        /** 0.00125 -> "0.00125", 1.0 -> "1": what C's %g prints for these bounds. */
        static String trim(double v) {
            String s = String.format(Locale.ROOT, "%.6f", v);
            return s.replaceAll("0+$", "").replaceAll("\\.$", "");
        }

        /** A number field of /proc/self/status ("VmRSS:" in kB, "Threads:"), or -1. */
        static long procStatus(String key) {
            try {
                for (String line : Files.readAllLines(Path.of("/proc/self/status")))
                    if (line.startsWith(key)) return Long.parseLong(line.substring(key.length()).trim().split("\\s+")[0]);
            } catch (IOException | RuntimeException e) {
                // not Linux: unknown
            }
            return -1;
        }

        static long countDir(String dir) {
            try (Stream<Path> s = Files.list(Path.of(dir))) {
                return s.count();
            } catch (IOException | RuntimeException e) {
                return -1;
            }
        }

        /** Sockets in TIME_WAIT (state 06) in /proc/net/tcp and tcp6: the JVM's sockets are IPv6. */
        static long timeWait() {
            long n = 0;
            for (String f : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
                try (Stream<String> lines = Files.lines(Path.of(f))) {
                    n += lines.skip(1).filter(l -> {
                        String[] w = l.trim().split("\\s+");
                        return w.length > 3 && w[3].equals("06");
                    }).count();
                } catch (IOException | RuntimeException e) {
                    // absent: count nothing
                }
            }
            return n;
        }

        /** An attribute of jdk.management's VirtualThreadSchedulerMXBean (JDK 24+), or -1. */
        static long scheduler(String attribute) {
            try {
                MBeanServer server = ManagementFactory.getPlatformMBeanServer();
                Object v = server.getAttribute(new ObjectName("jdk.management:type=VirtualThreadScheduler"), attribute);
                return v instanceof Number n ? n.longValue() : -1;
            } catch (Exception e) {
                return -1;
            }
        }
    }

    /**
     * Counts every request Tomcat answers, with its latency: an access log is what Tomcat calls
     * once per request, including the ones its parser refused before any servlet saw them.
     * Tomcat 10 passes the time in nanoseconds.
     */
    static final class MetricsValve extends ValveBase implements AccessLog {
        final Metrics metrics;

        MetricsValve(Metrics metrics) {
            super(true);
            this.metrics = metrics;
        }

        @Override public void invoke(Request request, Response response) throws IOException, jakarta.servlet.ServletException {
            getNext().invoke(request, response);
        }

        @Override public void log(Request request, Response response, long nanos) {
            metrics.request(response.getStatus(), nanos);
        }

        @Override public void setRequestAttributesEnabled(boolean enabled) { }

        @Override public boolean getRequestAttributesEnabled() { return false; }
    }

    /**
     * Tomcat's own error answers (a malformed request refused by its parser, say) as the C
     * server writes them: the reason phrase in plain text, instead of an HTML page with a
     * stack trace. The servlet's answers set a status without sendError and never come here.
     */
    public static final class PlainErrorValve extends ErrorReportValve {
        @Override protected void report(Request request, Response response, Throwable t) {
            int status = response.getStatus();
            if (status < 400 || response.getContentWritten() > 0 || !response.setErrorReported()) return;
            try {
                byte[] body = reason(status).getBytes(StandardCharsets.US_ASCII);
                response.setContentType("text/plain");
                response.setContentLength(body.length);
                response.getOutputStream().write(body);
                response.finishResponse();
            } catch (IOException | RuntimeException e) {
                // the client is gone: nothing to tell it
            }
        }
    }

    /* ==== Downstream ==== */

    /** Why a downstream call failed: the reason label of agg_downstream_failures_total, as in C. */
    enum Failure {
        NO_PORT("no_port"),           // connect: EADDRNOTAVAIL, no ephemeral port left to bind
        TIMEOUT("timeout"),           // the deadline (--timeout-ms) passed
        REFUSED("refused"),           // connect: ECONNREFUSED, nothing listens there
        BAD_RESPONSE("bad_response"), // not a 200 with a whole body of at most MAX_BODY
        OTHER("other");               // anything else (a reset, say)

        final String label;

        Failure(String label) { this.label = label; }
    }

    /**
     * The outcome of one downstream call: 200 with the backend's body; 502 or 504 with why
     * (and the exception, if one said so); or 503, no call made for want of a permit.
     */
    record Answer(int status, byte[] body, Failure failure, Throwable cause) {
        static final byte[] NONE = new byte[0];
        static final Answer NOT_CALLED = new Answer(504, NONE, null, null); // an earlier call failed
        static final Answer SHED = new Answer(503, NONE, null, null);
        // interrupted by its scope (a sibling failed): never the answer's status, a failure is
        static final Answer CANCELLED = new Answer(502, NONE, null, null);

        static Answer ok(byte[] body) { return new Answer(200, body, null, null); }

        static Answer failed(Failure why, Throwable cause) {
            return new Answer(why == Failure.TIMEOUT ? 504 : 502, NONE, why, cause);
        }

        /**
         * What an exception from a call means. The JDK throws java.net.BindException
         * ("Cannot assign requested address") when connect() finds no ephemeral port, and a
         * client may wrap it (HttpClient in a ConnectException): any link of the chain with
         * that text is port exhaustion, and that link is kept for the log.
         */
        static Answer failed(Throwable e) {
            for (Throwable t = e; t != null; t = t.getCause())
                if (String.valueOf(t.getMessage()).contains("Cannot assign requested address"))
                    return failed(Failure.NO_PORT, t);
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof SocketTimeoutException || t instanceof HttpTimeoutException)
                    return failed(Failure.TIMEOUT, t);
                if (t instanceof java.net.ConnectException) return failed(Failure.REFUSED, t);
            }
            return failed(Failure.OTHER, e);
        }
    }

    /** A downstream answer larger than this is refused (502), as HTTP_MAX_RESP_BODY in C. */
    static final int MAX_BODY = 16384;

    /** GET http://backend/item/<item>, within the deadline (System.nanoTime()). */
    interface Downstream {
        Answer get(InetSocketAddress backend, int item, long deadline);
    }

    static URI itemUri(InetSocketAddress backend, int item) {
        return URI.create("http://" + backend.getAddress().getHostAddress() + ":" + backend.getPort() + "/item/" + item);
    }

    /**
     * The deadlines of HttpURLConnection calls. The JDK clients' timeouts are per read (a
     * backend dripping a byte at a time never trips them), so the deadline is for the whole
     * call. Its one thread is virtual, so it adds no OS thread to the counts the lab measures;
     * a call that ends in time cancels its cut and takes it out of the queue (without that, a
     * finished call's cut, holding its connection, stayed queued for the whole --timeout-ms).
     */
    static final ScheduledThreadPoolExecutor DEADLINES = deadlines();

    static ScheduledThreadPoolExecutor deadlines() {
        var s = new ScheduledThreadPoolExecutor(1, Thread.ofVirtual().name("deadlines").factory());
        s.setRemoveOnCancelPolicy(true);
        return s;
    }

    static long millisLeft(long deadline) {
        return (deadline - System.nanoTime()) / 1_000_000;
    }

    /**
     * Ends one HttpURLConnection call at its deadline, however the backend drips. Why not
     * just disconnect(): once the headers are in, disconnect() closes the response stream,
     * not the socket, and the stream's close waits for its lock (a ReentrantLock in
     * sun.net.www.MeteredStream), which the caller holds through every blocking read and
     * retakes at once (the lock is not fair), so the cut came at the end of the dripped body;
     * then, with under http.KeepAlive.remainingData left, the connection went to the JDK's
     * Keep-Alive-SocketCleaner (one more platform thread) to be drained back into the cache.
     * (It was never a retry: HttpURLConnection retries a GET only while reading the status
     * line, and disconnect() turns that off.) So:
     *   virtual   the caller is interrupted: a virtual thread blocked in a socket read or
     *             connect is woken, the JDK closes the socket ("Closed by interrupt") and,
     *             on JDK 25, does not retry; no lock is involved (JEP 444's interruptible I/O).
     *   platform  socket I/O on a platform thread cannot be interrupted, so disconnect()
     *             it is, on a virtual thread of its own (it may wait for the lock): before
     *             the headers it closes the socket at once; in the body the caller stops
     *             reading at its next byte or read timeout, lets go of the lock, and the
     *             close closes the socket (remainingData = 0, see configureJdk).
     * The monitor makes "cut" and "done" exclusive, so an interrupt never outlives its call.
     * The plain-socket client (--no-pool) is cut the same way, its abort being to close the
     * socket, which wakes a platform thread blocked in it.
     */
    static final class Cut implements Runnable {
        final Thread caller = Thread.currentThread();
        final Runnable platformAbort; // what ends the call when the caller is a platform thread
        volatile boolean cut;
        boolean done;
        ScheduledFuture<?> timer;

        Cut(Runnable platformAbort, long millis) {
            this.platformAbort = platformAbort;
            timer = DEADLINES.schedule(this, millis, TimeUnit.MILLISECONDS);
        }

        @Override public void run() {
            synchronized (this) {
                if (done) return;
                cut = true;
                if (caller.isVirtual()) caller.interrupt();
            }
            if (!caller.isVirtual()) Thread.ofVirtual().name("deadline-cut").start(platformAbort);
        }

        /** The call is over: no cut from now on; clears the caller's interrupt if it was cut. */
        void finish() {
            timer.cancel(false);
            synchronized (this) {
                done = true;
            }
            if (cut && caller.isVirtual()) Thread.interrupted();
        }
    }

    /**
     * HttpURLConnection: blocking I/O. On a virtual thread the JDK parks it instead of blocking
     * the carrier. Its pool is the JDK's keep-alive cache (a fully read, closed stream returns
     * the connection to it); a stale pooled connection is retried once by the JDK itself.
     */
    static final class UrlConnectionDownstream implements Downstream {
        @Override public Answer get(InetSocketAddress backend, int item, long deadline) {
            long left = millisLeft(deadline);
            if (left <= 0) return Answer.failed(Failure.TIMEOUT, null);
            HttpURLConnection c;
            try {
                c = (HttpURLConnection) itemUri(backend, item).toURL().openConnection(Proxy.NO_PROXY);
            } catch (IOException | RuntimeException e) {
                return Answer.failed(e);
            }
            c.setConnectTimeout((int) Math.min(left, Integer.MAX_VALUE));
            c.setReadTimeout((int) Math.min(left, Integer.MAX_VALUE)); // per read, not per call
            c.setUseCaches(false);
            Cut cut = new Cut(c::disconnect, left);
            try {
                Answer a = exchange(c, cut);
                if (a.status() != 200) c.disconnect();
                return a;
            } catch (IOException | RuntimeException e) { // a RuntimeException: the cut raced the JDK
                c.disconnect();
                return cut.cut ? Answer.failed(Failure.TIMEOUT, e) : Answer.failed(e);
            } finally {
                cut.finish();
            }
        }

        /**
         * Send, read the answer whole (so that the connection goes back to the cache), or stop
         * when cut. The buffer is the Content-Length's size: one of MAX_BODY per call was
         * 44% of the bytes the JVM allocated per request (JFR), and young collections.
         */
        static Answer exchange(HttpURLConnection c, Cut cut) throws IOException {
            int status = c.getResponseCode(); // -1: not HTTP at all
            long length = c.getContentLengthLong(); // -1: chunked or to the end
            if (status != 200 || length > MAX_BODY) return Answer.failed(Failure.BAD_RESPONSE, null);
            byte[] body = new byte[length >= 0 ? (int) length : MAX_BODY + 1];
            int n = 0, r = 0;
            try (InputStream in = c.getInputStream()) {
                while (n < body.length && !cut.cut && (r = in.read(body, n, body.length - n)) >= 0) n += r;
            }
            if (cut.cut) return Answer.failed(Failure.TIMEOUT, null);
            if (n < length || n > MAX_BODY) return Answer.failed(Failure.BAD_RESPONSE, null); // cut short, or too long
            return Answer.ok(n == body.length ? body : Arrays.copyOf(body, n));
        }
    }

    /**
     * --no-pool: one connection per call over a plain Socket, HTTP/1.1, the answer's length
     * from its Content-Length. HttpURLConnection without keep-alive always sends Connection:
     * close, so the backend would always close first; here who closes first is chosen
     * (--close-first), and with it whose port waits in TIME_WAIT for 60 s after each call
     * (net.close_first):
     *   client  the request leaves the connection open; once the body is in, this side
     *           closes, its FIN goes first, and THIS server's ephemeral port holds TIME_WAIT:
     *           a range of P ports makes at most P connections a minute (the port wall).
     *   server  the request says Connection: close and this side reads on to the backend's
     *           FIN (read() = -1) before closing, so TIME_WAIT sits on the backend's port,
     *           where Linux lets the next SYN from the same client port take it over.
     */
    static final class SocketDownstream implements Downstream {
        final boolean serverClosesFirst;

        SocketDownstream(boolean serverClosesFirst) { this.serverClosesFirst = serverClosesFirst; }

        @Override public Answer get(InetSocketAddress backend, int item, long deadline) {
            long left = millisLeft(deadline);
            if (left <= 0) return Answer.failed(Failure.TIMEOUT, null);
            var s = new java.net.Socket();
            Cut cut = new Cut(() -> closeQuietly(s), left);
            try (s) {
                s.connect(backend, (int) Math.min(left, Integer.MAX_VALUE));
                s.setSoTimeout((int) Math.min(Math.max(1, millisLeft(deadline)), Integer.MAX_VALUE)); // per read
                s.getOutputStream().write(("GET /item/" + item + " HTTP/1.1\r\nHost: " + backend.getAddress().getHostAddress()
                        + ":" + backend.getPort() + (serverClosesFirst ? "\r\nConnection: close" : "") + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                InputStream in = new java.io.BufferedInputStream(s.getInputStream(), 1024);
                int length = head(in);
                byte[] body = length >= 0 ? in.readNBytes(length) : null;
                if (body == null || body.length < length || (serverClosesFirst && in.read() >= 0))
                    return Answer.failed(Failure.BAD_RESPONSE, null); // not whole, or more than the answer
                return Answer.ok(body);
            } catch (IOException | RuntimeException e) {
                return cut.cut ? Answer.failed(Failure.TIMEOUT, e) : Answer.failed(e);
            } finally {
                cut.finish();
            }
        }

        /** Read an answer's head: its Content-Length if it is a 200 with one of at most MAX_BODY, else -1. */
        static int head(InputStream in) throws IOException {
            String status = line(in);
            boolean ok = status != null && status.startsWith("HTTP/1.") && status.startsWith(" 200", 8)
                    && (status.length() == 12 || status.charAt(12) == ' '); // "HTTP/1.1 200 OK"
            if (!ok) return -1;
            int length = -1;
            for (String h; (h = line(in)) != null && !h.isEmpty();) {
                int colon = h.indexOf(':');
                if (colon > 0 && h.substring(0, colon).trim().equalsIgnoreCase("Content-Length")) {
                    try {
                        length = Integer.parseInt(h.substring(colon + 1).trim());
                    } catch (NumberFormatException e) {
                        return -1;
                    }
                }
            }
            return length <= MAX_BODY ? length : -1;
        }

        /** One header line without its CR LF (at most 8192 characters kept); null at the end of the stream. */
        static String line(InputStream in) throws IOException {
            var b = new StringBuilder();
            for (int c; (c = in.read()) >= 0;) {
                if (c == '\n') return b.toString();
                if (c != '\r' && b.length() < 8192) b.append((char) c);
            }
            return null;
        }

        static void closeQuietly(java.net.Socket s) {
            try {
                s.close();
            } catch (IOException e) {
                // closed anyway
            }
        }
    }

    /**
     * java.net.http.HttpClient: asynchronous inside (one selector thread), blocking for us:
     * send() waits on a future, which parks a virtual thread. Its connection pool has no cap.
     */
    static final class HttpClientDownstream implements Downstream {
        final HttpClient client;
        final boolean pool;

        HttpClientDownstream(Config cfg, Metrics metrics) {
            HttpClient.Builder b = HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)      // the backends speak HTTP/1.1 only
                    .proxy(HttpClient.Builder.NO_PROXY)
                    .connectTimeout(Duration.ofMillis(cfg.timeoutMs));
            // Its internal tasks: virtual threads in virtual mode, else its default cached pool
            // of platform threads ("HttpClient-N-Worker-M"). The pitfall (--client
            // httpclient-default): left at its default, that pool grows with the calls in
            // flight, so a virtual-thread server grows OS threads again, as a platform one does.
            if (cfg.virtual && !cfg.clientOwnPool) b.executor(metrics::startVirtual);
            client = b.build();
            pool = cfg.pool;
        }

        @Override public Answer get(InetSocketAddress backend, int item, long deadline) {
            long left = millisLeft(deadline);
            if (left <= 0) return Answer.failed(Failure.TIMEOUT, null);
            try {
                HttpRequest.Builder rq = HttpRequest.newBuilder(itemUri(backend, item)).timeout(Duration.ofMillis(left)).GET();
                if (!pool) rq.header("Connection", "close"); // allowed by jdk.httpclient.allowRestrictedHeaders (main)
                // the request's timeout ends at the headers; the whole answer waits until the deadline
                var pending = client.sendAsync(rq.build(), HttpResponse.BodyHandlers.ofByteArray());
                HttpResponse<byte[]> rs;
                try {
                    rs = pending.get(Math.max(1, millisLeft(deadline)), TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    pending.cancel(true);
                    return Answer.failed(Failure.TIMEOUT, e);
                } catch (ExecutionException e) {
                    return Answer.failed(e.getCause());
                } catch (InterruptedException e) { // the fan-out's scope cancelled this call:
                    pending.cancel(true);          // abort the exchange (its connection closed)
                    throw e;
                }
                if (rs.statusCode() != 200 || rs.body().length > MAX_BODY) return Answer.failed(Failure.BAD_RESPONSE, null);
                return Answer.ok(rs.body());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Answer.failed(Failure.OTHER, e);
            } catch (RuntimeException e) {
                return Answer.failed(e);
            }
        }
    }

    /* ==== A native frame (--pin native) ==== */

    /**
     * Runs a task inside a C function's callback: libc's qsort, called through the FFM API
     * (java.lang.foreign) on two ints, calls back into Java to compare them (an upcall), and
     * the comparison runs the task. While it runs, the thread's stack holds qsort's native
     * frame, and a virtual thread cannot unmount over a native frame (its stack cannot be
     * copied off the carrier with C frames in it), so each blocking call in the task blocks
     * the carrier: the pinning that JEP 491 (JDK 24) did not remove, as for a JNI callback.
     * JFR records each such park of 20 ms or more as jdk.VirtualThreadPinned.
     * Reached by reflection so that this file still compiles on JDK 21, where java.lang.foreign
     * is a preview API (parseArgs asks for JDK 22+). Calling a restricted method (the downcall,
     * the upcall stub) prints a warning unless the JVM runs with --enable-native-access=ALL-UNNAMED.
     */
    static final class NativeFrame {
        static final ThreadLocal<Runnable> TASK = new ThreadLocal<>();
        final MethodHandle qsort; // void qsort(void *base, size_t n, size_t size, int (*compar)(const void *, const void *))
        final Object base;        // a MemorySegment: two ints, both 0, so equal: qsort leaves them as they are
        final Object compar;      // a MemorySegment: the upcall stub, compare() below as a C function pointer

        NativeFrame() throws ReflectiveOperationException {
            Class<?> linkerC = ffm("Linker"), layoutC = ffm("MemoryLayout"), descC = ffm("FunctionDescriptor");
            Class<?> arenaC = ffm("Arena"), segC = ffm("MemorySegment"), options = ffm("Linker$Option").arrayType();
            Object address = layout("ADDRESS"), size = layout("JAVA_LONG"), integer = layout("JAVA_INT");
            Object linker = linkerC.getMethod("nativeLinker").invoke(null);
            Object libc = linkerC.getMethod("defaultLookup").invoke(linker);
            Object symbol = ((java.util.Optional<?>) ffm("SymbolLookup").getMethod("find", String.class).invoke(libc, "qsort"))
                    .orElseThrow(() -> new NoSuchMethodException("qsort is not in the C library"));
            Object noOptions = java.lang.reflect.Array.newInstance(options.componentType(), 0);
            Object qsortType = descC.getMethod("ofVoid", layoutC.arrayType())
                    .invoke(null, layouts(layoutC, address, size, size, address));
            qsort = (MethodHandle) linkerC.getMethod("downcallHandle", segC, descC, options)
                    .invoke(linker, symbol, qsortType, noOptions);
            Object comparType = descC.getMethod("of", layoutC, layoutC.arrayType())
                    .invoke(null, integer, layouts(layoutC, address, address));
            MethodHandle compare = MethodHandles.lookup()
                    .findStatic(NativeFrame.class, "compare", MethodType.methodType(int.class, Object.class, Object.class))
                    .asType(MethodType.methodType(int.class, segC, segC));
            Object global = arenaC.getMethod("global").invoke(null); // never freed: one stub, one base for the JVM's life
            compar = linkerC.getMethod("upcallStub", MethodHandle.class, descC, arenaC, options)
                    .invoke(linker, compare, comparType, global, noOptions);
            base = arenaC.getMethod("allocate", long.class).invoke(global, 8L); // zeroed
            boolean[] ran = {false};
            around(() -> ran[0] = true);
            if (!ran[0]) throw new NoSuchMethodException("qsort did not call its comparator for two ints");
        }

        static Class<?> ffm(String name) throws ClassNotFoundException {
            return Class.forName("java.lang.foreign." + name);
        }

        static Object layout(String name) throws ReflectiveOperationException {
            return ffm("ValueLayout").getField(name).get(null);
        }

        static Object layouts(Class<?> layoutC, Object... of) {
            Object a = java.lang.reflect.Array.newInstance(layoutC, of.length);
            for (int i = 0; i < of.length; i++) java.lang.reflect.Array.set(a, i, of[i]);
            return a;
        }

        /** qsort's comparator, running in the upcall: the task, once; the two ints are equal. */
        static int compare(Object left, Object right) {
            Runnable task = TASK.get();
            TASK.remove();
            if (task != null) task.run(); // never throws (around): an upcall that throws ends the JVM
            return 0;
        }

        /** Run the task on this thread, inside qsort's call to its comparator. */
        void around(Runnable task) {
            Throwable[] thrown = {null};
            TASK.set(() -> {
                try {
                    task.run();
                } catch (Throwable t) {
                    thrown[0] = t;
                }
            });
            try {
                qsort.invoke(base, 2L, 4L, compar);
            } catch (Throwable t) {
                thrown[0] = t;
            } finally {
                TASK.remove();
            }
            if (thrown[0] instanceof RuntimeException e) throw e;
            if (thrown[0] instanceof Error e) throw e;
            if (thrown[0] != null) throw new IllegalStateException(thrown[0]);
        }
    }

    /* ==== Structured fan-out (--on-failure cancel) ==== */

    /**
     * ?parallel=1 in JDK 25's StructuredTaskScope (JEP 505, a preview API): the K calls are the
     * scope's subtasks, the first failed answer cancels the scope, and the scope's deadline is
     * the request's. Written out, callAll runs exactly this:
     *
     *   try (var scope = StructuredTaskScope.open(
     *           Joiner.<Answer>allUntil(s -> s.state() != SUCCESS || s.get().status() != 200),
     *           cf -> cf.withThreadFactory(threads).withTimeout(Duration.ofNanos(deadline - now)))) {
     *       for (int i = 0; i < k; i++) { int item = i; scope.fork(() -> answers[item] = call(item, deadline)); }
     *       scope.join();  // returns once one answer failed (the joiner cancelled the scope) or all are in;
     *   }                  // TimeoutException at the deadline. close(): every subtask has ended
     *
     * Cancelling interrupts the siblings. A virtual thread parked in a socket read or connect is
     * woken, the JDK closes its socket ("Closed by interrupt", JEP 444) and the call returns at
     * once; HttpClient's send is aborted by cancelling its future. The scope never outlives the
     * request and no subtask outlives the scope: close() waits for all of them. In platform
     * mode the subtasks are platform threads (1:1, as the pool), whose socket reads an interrupt
     * does not end: the siblings run on until their reads return, and close() waits for them, as
     * Future.cancel(true) on a pool thread blocked in I/O would.
     *
     * Reached through method handles, as the FFM API of --pin native is, so that this file
     * still compiles on JDK 21-24, whose StructuredTaskScope has another shape. It is used only
     * on a JVM started with --enable-preview whose StructuredTaskScope has these methods (JDK
     * 25); elsewhere an explicit --on-failure cancel refuses to start (one line, exit 2) and the
     * default falls back to join-all (--on-failure wait), saying so at start.
     */
    static final class ScopedFanout {
        /** This JVM's StructuredTaskScope, or null (not JDK 25's, or preview not enabled). */
        static final ScopedFanout JDK = find();

        final MethodHandle open, allUntil, fork, join, close, withTimeout, withThreadFactory;
        final Class<?> timeoutException;
        final java.util.concurrent.ThreadFactory threads; // the subtasks' (set by with)

        ScopedFanout(MethodHandle[] h, Class<?> timeoutException, java.util.concurrent.ThreadFactory threads) {
            open = h[0]; allUntil = h[1]; fork = h[2]; join = h[3]; close = h[4]; withTimeout = h[5];
            withThreadFactory = h[6];
            this.timeoutException = timeoutException;
            this.threads = threads;
        }

        /** The same scope with the subtasks on these threads. */
        ScopedFanout with(java.util.concurrent.ThreadFactory t) {
            return new ScopedFanout(new MethodHandle[] {open, allUntil, fork, join, close, withTimeout, withThreadFactory},
                    timeoutException, t);
        }

        static ScopedFanout find() {
            if (!ManagementFactory.getRuntimeMXBean().getInputArguments().contains("--enable-preview")) return null;
            try {
                Class<?> sts = Class.forName("java.util.concurrent.StructuredTaskScope");
                Class<?> joiner = Class.forName("java.util.concurrent.StructuredTaskScope$Joiner");
                Class<?> subtask = Class.forName("java.util.concurrent.StructuredTaskScope$Subtask");
                Class<?> conf = Class.forName("java.util.concurrent.StructuredTaskScope$Configuration");
                var l = MethodHandles.publicLookup();
                MethodHandle[] h = {
                    l.findStatic(sts, "open", MethodType.methodType(sts, joiner, java.util.function.Function.class)),
                    l.findStatic(joiner, "allUntil", MethodType.methodType(joiner, java.util.function.Predicate.class)),
                    l.findVirtual(sts, "fork", MethodType.methodType(subtask, java.util.concurrent.Callable.class)),
                    l.findVirtual(sts, "join", MethodType.methodType(Object.class)),
                    l.findVirtual(sts, "close", MethodType.methodType(void.class)),
                    l.findVirtual(conf, "withTimeout", MethodType.methodType(conf, Duration.class)),
                    l.findVirtual(conf, "withThreadFactory", MethodType.methodType(conf, java.util.concurrent.ThreadFactory.class)),
                };
                return new ScopedFanout(h, Class.forName("java.util.concurrent.StructuredTaskScope$TimeoutException"), null);
            } catch (ReflectiveOperationException e) {
                return null; // JDK 21-24, or a later JDK that reshaped the API again
            }
        }

        interface Call { Answer call(int item, long deadline); }

        /** The K calls as the scope's subtasks (see above); every slot of answers set on return. */
        void callAll(Answer[] answers, long deadline, Call call) {
            java.util.function.Predicate<Object> failed = s -> { // the joiner: cancel on this?
                try {
                    return ((Answer) ((java.util.function.Supplier<?>) s).get()).status() != 200;
                } catch (IllegalStateException e) { // the subtask threw: no answer at all
                    return true;
                }
            };
            java.util.function.Function<Object, Object> config = cf -> invoke(withTimeout,
                    invoke(withThreadFactory, cf, threads), Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            boolean timedOut = false;
            Object scope = invoke(open, invoke(allUntil, failed), config);
            try {
                for (int i = 0; i < answers.length; i++) {
                    final int item = i;
                    invoke(fork, scope, (java.util.concurrent.Callable<Answer>) () -> answers[item] = call.call(item, deadline));
                }
                join.invoke(scope);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // Tomcat is stopping: close() cancels the rest
            } catch (Throwable e) {
                if (!timeoutException.isInstance(e)) throw e instanceof RuntimeException r ? r : new IllegalStateException(e);
                timedOut = true;
            } finally {
                invoke(close, scope); // cancels what still runs and waits for it: no subtask outlives this
            }
            // A subtask never started (forked after the scope was cancelled) or cut by the deadline
            for (int i = 0; i < answers.length; i++) {
                if (timedOut && (answers[i] == null || answers[i] == Answer.CANCELLED)) answers[i] = Answer.failed(Failure.TIMEOUT, null);
                else if (answers[i] == null) answers[i] = Answer.CANCELLED;
            }
        }

        /** A method handle's call; what it throws unchecked goes on as it is. */
        static Object invoke(MethodHandle h, Object... args) {
            try {
                return h.invokeWithArguments(args);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /* ==== Bearer tokens (--auth) ==== */

    /**
     * The JWT (RFC 7519) check of a secured /aggregate, as Spring Security's resource server
     * does it on every request: "Authorization: Bearer HEADER.PAYLOAD.SIGNATURE", each part
     * base64url without padding. With the JDK's own crypto only:
     *   hs256  HMAC-SHA256 with the key file's raw bytes (javax.crypto.Mac), compared in constant
     *          time (MessageDigest.isEqual), so the time taken says nothing about how much matched;
     *   rs256  SHA256withRSA with an RSA public key in PEM (java.security.Signature).
     * The algorithm is the server's, never the token's: a header whose "alg" differs ("none",
     * or HS256 against an RSA key, the confusion of a public key used as an HMAC secret) is
     * refused before any signature is computed. Then the claims: "exp" required and "nbf" if
     * present, each a number of seconds, with SKEW_S of clock skew either way; "iss" and "aud"
     * (a string or an array of strings) as configured. Anything else wrong, and a missing
     * header, is the same 401 with WWW-Authenticate: Bearer error="invalid_token" and no
     * detail; an Authorization header over MAX_TOKEN bytes is 431. The JSON is the JDK's to
     * parse in no public API, so Json below reads exactly RFC 8259 objects and refuses a
     * duplicate name (which claim would win is how parsers are made to disagree).
     */
    static final class BearerAuth {
        static final long SKEW_S = 30;        // clock skew allowed on exp and nbf, seconds
        static final int MAX_TOKEN = 4096;    // the longest Authorization header read, bytes (Tomcat's
                                              // own limit is 8 KiB for all headers: then 400)

        final String alg;                     // "HS256" or "RS256", from --auth
        final byte[] secret;                  // hs256
        final java.security.PublicKey publicKey; // rs256
        final String issuer, audience;        // null: not checked

        BearerAuth(String spec, String issuer, String audience) throws UsageError {
            int colon = spec.indexOf(':');
            String kind = colon < 0 ? spec : spec.substring(0, colon), file = colon < 0 ? "" : spec.substring(colon + 1);
            this.issuer = issuer;
            this.audience = audience;
            try {
                byte[] bytes = Files.readAllBytes(Path.of(file));
                switch (kind) {
                    case "hs256" -> {
                        if (bytes.length < 32) throw new UsageError("--auth hs256: the key needs >= 32 bytes (RFC 7518 3.2), " + file + " has " + bytes.length);
                        alg = "HS256"; secret = bytes; publicKey = null;
                    }
                    case "rs256" -> {
                        String pem = new String(bytes, StandardCharsets.US_ASCII)
                                .replaceAll("-----(BEGIN|END) PUBLIC KEY-----", "").replaceAll("\\s", "");
                        var der = new java.security.spec.X509EncodedKeySpec(java.util.Base64.getDecoder().decode(pem));
                        alg = "RS256"; secret = null;
                        publicKey = java.security.KeyFactory.getInstance("RSA").generatePublic(der);
                    }
                    default -> throw new UsageError("--auth must be hs256:KEYFILE or rs256:PUBKEY.pem, not '" + spec + "'");
                }
            } catch (IOException | IllegalArgumentException | java.security.GeneralSecurityException e) {
                throw new UsageError("--auth " + spec + ": cannot read the key: " + e.getMessage());
            }
        }

        /** 200 if the request may pass, else the status to answer (401 or 431). */
        int check(String authorization, long nowS) {
            if (authorization == null) return 401;
            if (authorization.length() > MAX_TOKEN) return 431;
            if (!authorization.startsWith("Bearer ")) return 401;
            String[] part = authorization.substring(7).split("\\.", -1);
            try {
                if (part.length != 3) return 401;
                var header = Json.object(base64url(part[0]));
                if (!alg.equals(header.get("alg"))) return 401;
                byte[] signed = (part[0] + "." + part[1]).getBytes(StandardCharsets.US_ASCII);
                if (!signatureOk(signed, base64url(part[2]))) return 401;
                var claims = Json.object(base64url(part[1]));
                if (!(claims.get("exp") instanceof Double exp) || nowS >= exp + SKEW_S) return 401;
                Object nbf = claims.get("nbf");
                if (nbf != null && (!(nbf instanceof Double n) || nowS < n - SKEW_S)) return 401;
                if (issuer != null && !issuer.equals(claims.get("iss"))) return 401;
                Object aud = claims.get("aud");
                if (audience != null && !audience.equals(aud) && !(aud instanceof List<?> l && l.contains(audience))) return 401;
                return 200;
            } catch (IllegalArgumentException | java.security.GeneralSecurityException e) {
                return 401; // bad base64url, bad JSON, a signature of the wrong length...
            }
        }

        boolean signatureOk(byte[] signed, byte[] signature) throws java.security.GeneralSecurityException {
            if (secret != null) {
                var mac = javax.crypto.Mac.getInstance("HmacSHA256");
                mac.init(new javax.crypto.spec.SecretKeySpec(secret, "HmacSHA256"));
                return java.security.MessageDigest.isEqual(mac.doFinal(signed), signature);
            }
            var rsa = java.security.Signature.getInstance("SHA256withRSA");
            rsa.initVerify(publicKey);
            rsa.update(signed);
            return rsa.verify(signature);
        }

        /** base64url without padding (RFC 7515 2), strictly: any other byte is an error. */
        static byte[] base64url(String s) {
            if (s.isEmpty() || !s.chars().allMatch(c -> c == '-' || c == '_' || Character.isLetterOrDigit(c) && c < 128))
                throw new IllegalArgumentException("not base64url");
            return java.util.Base64.getUrlDecoder().decode(s);
        }
    }

    /**
     * `Aggregator time-auth TOKENFILE --auth ... [--auth-issuer I] [--auth-audience A]`, for
     * `aggregator calibrate --server java` only: the JVM's token check timed in this process,
     * as calibrate times the C server's auth_check (aggregator.c, cal_auth_one). The call is
     * the servlet's own, BearerAuth.check on the Authorization header's value (TOKENFILE's
     * first line, as calibrate mints it) and the clock's second; each batch of CHECKS is timed
     * on the thread's CPU clock (ThreadMXBean: CLOCK_THREAD_CPUTIME_ID, so time the thread did
     * not run is not counted), after WARMUP_S of checks so that C2 has compiled the path (a
     * served JVM's is, after its minutes of load); the median of BATCHES batches is the figure.
     * Prints "median least greatest" in µs per check; exits 1 when the check refuses the token
     * (its figure would time the early refusal, not the check).
     */
    static final class TimeAuth {
        static final int CHECKS = 500, BATCHES = 21;
        static final double WARMUP_S = 3;

        static void main(String[] args) throws Exception {
            if (args.length < 2) throw new UsageError("time-auth: TOKENFILE --auth ... needed");
            String header = Files.readAllLines(Path.of(args[1])).get(0);
            // serve's flags; parseArgs wants a backend, which no check calls
            Config c = parseArgs(Stream.concat(Stream.of("--backends", "127.0.0.1:9"),
                    Arrays.stream(args, 2, args.length)).toArray(String[]::new));
            if (c == null || c.auth == null) throw new UsageError("time-auth needs --auth");
            var threads = ManagementFactory.getThreadMXBean();
            int refused = refusals(c.auth, header, 1);
            long end = System.nanoTime() + (long) (WARMUP_S * 1e9);
            while (refused == 0 && System.nanoTime() < end)
                refused += refusals(c.auth, header, CHECKS);
            double[] us = new double[BATCHES];
            for (int b = 0; refused == 0 && b < BATCHES; b++) {
                long t0 = threads.getCurrentThreadCpuTime();
                refused += refusals(c.auth, header, CHECKS);
                us[b] = (threads.getCurrentThreadCpuTime() - t0) / 1e3 / CHECKS;
            }
            if (refused > 0) {
                System.err.println("aggregator time-auth: the check refused the token");
                System.exit(1);
            }
            Arrays.sort(us);
            System.out.printf(Locale.ROOT, "%.3f %.3f %.3f%n", us[BATCHES / 2], us[0],
                    us[BATCHES - 1]);
        }

        /** n checks as the servlet makes them; how many refused (the sum keeps them live). */
        static int refusals(BearerAuth auth, String header, int n) {
            int refused = 0;
            for (int i = 0; i < n; i++)
                refused += auth.check(header, System.currentTimeMillis() / 1000) == 200 ? 0 : 1;
            return refused;
        }
    }

    /** RFC 8259 JSON, just enough for a token: values as Map, List, String, Double, Boolean, null. */
    static final class Json {
        final String s;
        int i;

        Json(String s) { this.s = s; }

        /** The object that is the whole of these bytes (UTF-8), or IllegalArgumentException. */
        static java.util.Map<String, Object> object(byte[] utf8) {
            var j = new Json(new String(utf8, StandardCharsets.UTF_8));
            Object v = j.value(0);
            j.space();
            if (!(v instanceof java.util.Map<?, ?>) || j.i != j.s.length()) throw new IllegalArgumentException("not one object");
            @SuppressWarnings("unchecked") var m = (java.util.Map<String, Object>) v;
            return m;
        }

        void space() { while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) i++; }

        char next() {
            space();
            if (i >= s.length()) throw new IllegalArgumentException("truncated");
            return s.charAt(i);
        }

        void expect(char c) {
            if (next() != c) throw new IllegalArgumentException("expected " + c);
            i++;
        }

        Object value(int depth) {
            if (depth > 16) throw new IllegalArgumentException("too deep");
            char c = next();
            if (c == '{') {
                var m = new java.util.LinkedHashMap<String, Object>();
                i++;
                if (next() == '}') { i++; return m; }
                do {
                    if (next() != '"') throw new IllegalArgumentException("a name");
                    String k = string();
                    expect(':');
                    if (m.put(k, value(depth + 1)) != null || m.size() > 64) throw new IllegalArgumentException("duplicate " + k);
                } while (next() == ',' && ++i > 0);
                expect('}');
                return m;
            }
            if (c == '[') {
                var l = new ArrayList<Object>();
                i++;
                if (next() == ']') { i++; return l; }
                do l.add(value(depth + 1)); while (next() == ',' && ++i > 0 && l.size() < 64);
                expect(']');
                return l;
            }
            if (c == '"') return string();
            for (String w : new String[] {"true", "false", "null"})
                if (s.startsWith(w, i)) { i += w.length(); return w.equals("null") ? null : Boolean.valueOf(w.equals("true")); }
            var m = java.util.regex.Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?").matcher(s).region(i, s.length());
            if (!m.lookingAt()) throw new IllegalArgumentException("not a value");
            i = m.end();
            return Double.valueOf(m.group());
        }

        String string() {
            var b = new StringBuilder();
            for (i++; ; i++) {
                if (i >= s.length()) throw new IllegalArgumentException("unterminated string");
                char c = s.charAt(i);
                if (c == '"') { i++; return b.toString(); }
                if (c < 0x20) throw new IllegalArgumentException("a control character");
                if (c != '\\') { b.append(c); continue; }
                if (++i >= s.length()) throw new IllegalArgumentException("unterminated escape");
                char e = s.charAt(i);
                int at = "\"\\/bfnrt".indexOf(e);
                if (at >= 0) b.append("\"\\/\b\f\n\r\t".charAt(at));
                else if (e == 'u' && i + 4 < s.length() && s.substring(i + 1, i + 5).chars().allMatch(h -> Character.digit(h, 16) >= 0)) {
                    b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
                    i += 4;
                }
                else throw new IllegalArgumentException("a bad escape");
            }
        }
    }

    /* ==== Aggregate ==== */

    /**
     * The servlet behind every path: GET /aggregate[?parallel=1], GET /metrics, 404 otherwise,
     * 405 for any other method (checked first, as in agg_route). Bodies are written whole with a
     * Content-Length, errors as a plain-text reason phrase, like aggregator.c.
     */
    @SuppressWarnings("serial") // never serialized: embedded, one instance
    static final class AggregateServlet extends HttpServlet {
        final Config cfg;
        final Metrics metrics;
        final Downstream downstream;
        final NativeFrame nativeFrame; // --pin native, else null
        final ScopedFanout scoped;     // --on-failure cancel where the JDK has it, else null

        AggregateServlet(Config cfg, Metrics metrics, Downstream downstream, NativeFrame nativeFrame) {
            this.cfg = cfg;
            this.metrics = metrics;
            this.downstream = downstream;
            this.nativeFrame = nativeFrame;
            this.scoped = cfg.cancelOnFailure && ScopedFanout.JDK != null
                    ? ScopedFanout.JDK.with(cfg.virtual ? metrics::unstartedVirtual : Thread.ofPlatform().name("agg-fanout").factory())
                    : null;
        }

        @Override protected void service(HttpServletRequest rq, HttpServletResponse rs) throws IOException {
            if (!rq.getMethod().equals("GET")) {
                reply(rs, 405, "text/plain", reason(405).getBytes(StandardCharsets.US_ASCII));
                return;
            }
            switch (rq.getRequestURI()) {
                case "/aggregate" -> {
                    int allowed = cfg.auth == null ? 200 : cfg.auth.check(rq.getHeader("Authorization"), System.currentTimeMillis() / 1000);
                    if (allowed == 401) rs.setHeader("WWW-Authenticate", "Bearer error=\"invalid_token\"");
                    if (allowed == 200) aggregate(rq, rs);
                    else reply(rs, allowed, "text/plain", reason(allowed).getBytes(StandardCharsets.US_ASCII));
                }
                case "/metrics" -> reply(rs, 200, "text/plain; version=0.0.4", metrics.page().getBytes(StandardCharsets.UTF_8));
                default -> reply(rs, 404, "text/plain", reason(404).getBytes(StandardCharsets.US_ASCII));
            }
        }

        /** K downstream calls, their bodies joined into a JSON array; the first failure decides the status. */
        void aggregate(HttpServletRequest rq, HttpServletResponse rs) throws IOException {
            int k = cfg.fanout;
            boolean parallel = queryInt(rq.getQueryString(), "parallel") > 0;
            long deadline = System.nanoTime() + cfg.timeoutMs * 1_000_000L;
            Answer[] answers = new Answer[k];
            if (cfg.pin == Pin.SYNCHRONIZED) {
                // Like `synchronized` around a client call in application code. The lock is
                // per request (no contention: only the pinning matters) and published as a
                // request attribute so that escape analysis cannot elide it. On JDK 21-23 a
                // virtual thread that blocks while holding a monitor pins its carrier; JDK 24+
                // (JEP 491) unmounts it anyway. As in C, a pinned request does not fan out.
                Object lock = new Object();
                rq.setAttribute("aggregator.pin", lock);
                synchronized (lock) {
                    callSequentially(answers, deadline);
                }
            } else if (cfg.pin == Pin.NATIVE) {
                // Like a blocking call made from a JNI or FFM callback (a native library calling
                // back into Java): pinned on every JDK. Nor does it fan out.
                nativeFrame.around(() -> callSequentially(answers, deadline));
            } else if (parallel && k > 1 && scoped != null) {
                scoped.callAll(answers, deadline, this::call);
            } else if (parallel && k > 1) {
                callConcurrently(answers, deadline);
            } else {
                callSequentially(answers, deadline);
            }
            int status = 200;
            var body = new java.io.ByteArrayOutputStream(128 * k);
            body.write('[');
            for (int i = 0; i < k; i++) {
                Answer a = answers[i];
                if (a == null) a = Answer.NOT_CALLED;
                if (a.status() != 200 && status == 200 && a != Answer.CANCELLED) status = a.status();
                if (i > 0) body.write(',');
                body.write(a.body());
            }
            body.write(']');
            if (status == 200 && Arrays.asList(answers).contains(Answer.CANCELLED)) status = 502;
            // counted once per request, as a client counts its failures (bench's failed_no_port)
            if (Arrays.stream(answers).anyMatch(a -> a != null && a.failure() == Failure.NO_PORT))
                metrics.requestsNoPort.increment();
            if (status != 200) reply(rs, status, "text/plain", reason(status).getBytes(StandardCharsets.US_ASCII));
            else reply(rs, 200, "application/json", body.toByteArray());
        }

        /**
         * One downstream call, counted (and its failure by why). With --permits, a call first
         * takes a permit from a fair Semaphore, waiting at most --permit-wait-ms: a virtual
         * thread parks there, cheaply; past the wait the request is shed (503) instead of
         * queueing without bound (Resilience4j's Bulkhead with maxWaitDuration does the same).
         */
        Answer call(int item, long deadline) {
            var permits = metrics.permits;
            try {
                if (permits != null && !permits.tryAcquire(cfg.permitWaitMs, TimeUnit.MILLISECONDS)) {
                    metrics.shed.increment();
                    return Answer.SHED;
                }
            } catch (InterruptedException e) { // cancelled by the scope while waiting
                Thread.currentThread().interrupt();
                metrics.cancelled.increment();
                return Answer.CANCELLED;
            }
            long held = System.nanoTime();
            try {
                metrics.downstreamCalls.increment();
                Answer a = downstream.get(cfg.backends.get(item % cfg.backends.size()), item, deadline);
                // Still interrupted after the call: not by its own deadline (a Cut clears
                // that), so by the scope, which aborted the exchange: a cancellation.
                if (a.failure() != null && Thread.currentThread().isInterrupted()) {
                    metrics.cancelled.increment();
                    return Answer.CANCELLED;
                }
                if (a.failure() != null) metrics.failed(a.failure(), a.cause());
                return a;
            } finally {
                // the connection's time, as C's ds_held: here the exchange's, checkout or connect
                // to return or close (the JDK's clients have no hook nearer the socket)
                metrics.heldMicros.add((System.nanoTime() - held) / 1000);
                if (permits != null) permits.release();
            }
        }

        /** One call after the other, stopping at the first failure (as aggregator.c). */
        void callSequentially(Answer[] answers, long deadline) {
            for (int i = 0; i < answers.length && (i == 0 || answers[i - 1].status() == 200); i++)
                answers[i] = call(i, deadline);
        }

        /**
         * All K calls at once, joined before returning (structured concurrency without the
         * preview API): a virtual thread per call on a virtual thread, else a platform thread
         * per call, as the C server does with a pthread per call.
         */
        void callConcurrently(Answer[] answers, long deadline) {
            Thread[] kids = new Thread[answers.length];
            boolean onVirtual = Thread.currentThread().isVirtual();
            for (int i = 0; i < kids.length; i++) {
                final int item = i;
                Runnable task = () -> answers[item] = call(item, deadline);
                try {
                    kids[i] = onVirtual ? metrics.startVirtual(task) : Thread.ofPlatform().name("agg-fanout").start(task);
                } catch (OutOfMemoryError e) { // "unable to create native thread": do it ourselves
                    task.run();
                }
            }
            boolean interrupted = false;
            for (Thread t : kids) {
                while (t != null) {
                    try {
                        t.join();
                        break;
                    } catch (InterruptedException e) {
                        interrupted = true; // finish the join: the children write into answers
                    }
                }
            }
            if (interrupted) Thread.currentThread().interrupt();
        }

        /** The value of key=N in a query string, or 0 (absent or not a number), like http_query_int. */
        static long queryInt(String query, String key) {
            if (query == null) return 0;
            for (String pair : query.split("&")) {
                if (!pair.startsWith(key + "=")) continue;
                String v = pair.substring(key.length() + 1);
                int n = 0;
                while (n < v.length() && n < 9 && Character.isDigit(v.charAt(n))) n++;
                return n == 0 ? 0 : Long.parseLong(v.substring(0, n));
            }
            return 0;
        }

        static void reply(HttpServletResponse rs, int status, String contentType, byte[] body) throws IOException {
            rs.setStatus(status);
            rs.setContentType(contentType);
            rs.setContentLength(body.length);
            try (OutputStream out = rs.getOutputStream()) {
                out.write(body);
            }
        }
    }

    /* ==== Tomcat: the two models ==== */

    /**
     * Tomcat's executor for virtual mode, as Spring Boot sets it up (a VirtualThreadExecutor
     * named "tomcat-handler-" as the protocol's executor), wrapped only to count the virtual
     * threads it starts for /metrics.
     */
    static final class CountingVirtualExecutor implements Executor {
        final ExecutorService tomcats = new VirtualThreadExecutor("tomcat-handler-");
        final Metrics metrics;

        CountingVirtualExecutor(Metrics metrics) { this.metrics = metrics; }

        @Override public void execute(Runnable task) {
            tomcats.execute(metrics.countedVirtual(task));
        }
    }

    /** Embedded Tomcat with one NIO connector on 127.0.0.1, configured for the chosen model. */
    static Tomcat tomcat(Config cfg, Metrics metrics, NativeFrame nativeFrame, Path baseDir) {
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(baseDir.toString());
        Connector connector = new Connector(Http11NioProtocol.class.getName());
        Http11NioProtocol p = (Http11NioProtocol) connector.getProtocolHandler();
        connector.setPort(cfg.port);
        p.setAddress(InetAddress.getLoopbackAddress());  // loopback only
        p.setMaxConnections(cfg.maxConnections);         // platform.max_connections (both models)
        p.setAcceptCount(cfg.acceptCount);               // platform.accept_count: the listen backlog
        p.setKeepAliveTimeout(cfg.idleMs);               // no sim key: the C server's --idle-ms
        p.setConnectionTimeout(cfg.idleMs);              // (Tomcat's default 20 s is the C default too)
        p.setMaxKeepAliveRequests(-1);                   // no sim key: no cap, as the C server and the
                                                         // simulator (Tomcat's default closes every 100th)
        p.setProcessorCache(-1);                         // no sim key: a request's parser and buffers
        // (an Http11Processor, ~40 kB) are kept for the next request, however many are in
        // progress, as the simulator's fixed CPU per request assumes. Tomcat keeps 200 by
        // default (Spring Boot: server.tomcat.processor-cache): enough for a 200-thread pool,
        // but with 1000 virtual threads in progress 800 were made anew for every round of
        // requests: 30% of the bytes allocated per request (JFR), and young collections.
        if (cfg.virtual) {
            p.setExecutor(new CountingVirtualExecutor(metrics)); // virtual model; carriers are the JDK's
                                                                 // ForkJoinPool (virtual.parallelism)
        } else {
            p.setMaxThreads(cfg.threads);                // platform.max_threads
            p.setMinSpareThreads(cfg.minSpare);          // platform.min_spare
            connector.setProperty("threadsMaxIdleTime",  // platform.idle_timeout (an endpoint
                    String.valueOf(cfg.threadIdleMs));   // attribute, no setter on the protocol)
            if (cfg.maxQueue > 0) p.setMaxQueueSize(cfg.maxQueue); // platform.max_queue (0: unbounded)
        }
        tomcat.setConnector(connector);
        tomcat.getEngine().getPipeline().addValve(new MetricsValve(metrics));
        // The host adds an ErrorReportValve at start unless one of the named class is there.
        ((StandardHost) tomcat.getHost()).setErrorReportValveClass(PlainErrorValve.class.getName());
        tomcat.getHost().getPipeline().addValve(new PlainErrorValve());
        Context ctx = tomcat.addContext("", null);
        Downstream ds = cfg.httpClient ? new HttpClientDownstream(cfg, metrics)
                : cfg.pool ? new UrlConnectionDownstream() : new SocketDownstream(cfg.serverClosesFirst);
        if (cfg.permits > 0) metrics.permits = new java.util.concurrent.Semaphore(cfg.permits, true); // service.NAME.limit,
        // with service.NAME.wait = --permit-wait-ms (0 by default: shed at once)
        Tomcat.addServlet(ctx, "aggregate", new AggregateServlet(cfg, metrics, ds, nativeFrame));
        ctx.addServletMapping("/", "aggregate");
        metrics.protocol = p;
        return tomcat;
    }

    /* ==== A dripping backend (for tests) ==== */

    /**
     * `Aggregator drip --port P [--every-ms MS]`: a backend that sends its headers at once and
     * then its body one byte every MS (default 200), so that a per-read timeout never fires and
     * only a deadline for the whole call does. GET /cuts answers at once with how many bodies
     * their client closed before the end: how a test sees that a cut call closed its connection
     * rather than drained it back into a pool. A virtual thread per connection, keep-alive,
     * 127.0.0.1 only.
     */
    static final class Drip {
        static final byte[] BODY = "{\"id\":0,\"name\":\"item-0\",\"price\":10.00,\"stock\":100,\"tags\":[\"drip\",\"lab\"]}"
                .getBytes(StandardCharsets.US_ASCII);
        static final LongAdder CUTS = new LongAdder();

        static void main(String[] args) throws UsageError {
            int port = -1, everyMs = 200;
            for (int a = 1; a < args.length; a += 2) {
                if (a + 1 >= args.length) throw new UsageError("flag " + args[a] + " needs a value");
                switch (args[a]) {
                    case "--port" -> port = number(args[a + 1]);
                    case "--every-ms" -> everyMs = number(args[a + 1]);
                    default -> throw new UsageError("drip: unknown flag '" + args[a] + "'");
                }
            }
            if (port < 1 || port > 65535 || everyMs < 1) throw new UsageError("drip needs --port 1..65535 and --every-ms >= 1");
            final int every = everyMs;
            try (var server = new java.net.ServerSocket(port, 128, InetAddress.getLoopbackAddress())) {
                System.err.printf("aggregator drip: listening on 127.0.0.1:%d (a body byte every %d ms)%n", port, every);
                for (;;) {
                    var s = server.accept();
                    Thread.ofVirtual().name("drip").start(() -> serve(s, every));
                }
            } catch (IOException e) {
                System.err.println("aggregator drip: cannot listen on 127.0.0.1:" + port + ": " + e.getMessage());
                System.exit(1);
            }
        }

        /** Answer the requests of one connection until it closes. */
        static void serve(java.net.Socket s, int everyMs) {
            try (s) {
                var in = new java.io.BufferedInputStream(s.getInputStream());
                OutputStream out = s.getOutputStream();
                for (String line; (line = requestLine(in)) != null;) {
                    boolean cuts = line.startsWith("GET /cuts ");
                    byte[] body = cuts ? (CUTS.sum() + "\n").getBytes(StandardCharsets.US_ASCII) : BODY;
                    out.write(("HTTP/1.1 200 OK\r\nContent-Type: " + (cuts ? "text/plain" : "application/json")
                            + "\r\nContent-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    if (cuts) out.write(body);
                    out.flush();
                    if (!cuts && !drip(out, body, everyMs)) return;
                }
            } catch (IOException | InterruptedException e) {
                // the connection is gone
            }
        }

        /** Write the body a byte at a time; false (and counted) if the client closed first. */
        static boolean drip(OutputStream out, byte[] body, int everyMs) throws InterruptedException {
            for (byte b : body) {
                Thread.sleep(everyMs);
                try {
                    out.write(b);
                    out.flush();
                } catch (IOException e) { // the peer's reset: seen at the first or second byte after its close
                    CUTS.increment();
                    return false;
                }
            }
            return true;
        }

        /** The request line of the next request, its headers skipped; null at the end of the connection. */
        static String requestLine(InputStream in) throws IOException {
            var line = new StringBuilder();
            String first = null;
            for (int c; (c = in.read()) >= 0;) {
                if (c != '\n') {
                    if (c != '\r' && line.length() < 8192) line.append((char) c);
                } else if (first == null) {
                    first = line.toString();
                    line.setLength(0);
                } else if (line.isEmpty()) {
                    return first; // the blank line: the request is whole
                } else {
                    line.setLength(0);
                }
            }
            return null;
        }
    }

    /* ==== main ==== */

    /** JDK settings that must precede the first use of the class they configure. */
    static void configureJdk(Config cfg) {
        // virtual.max_pool_size is jdk.virtualThreadScheduler.maxPoolSize (default 256): set with -D.
        if (cfg.carriers > 0) // virtual.parallelism (read when the first virtual thread starts)
            System.setProperty("jdk.virtualThreadScheduler.parallelism", String.valueOf(cfg.carriers));
        // service.NAME.pool: HttpURLConnection keeps at most 5 idle connections per backend by
        // default, so 200 busy threads would reconnect on most calls. The C server keeps up to
        // --pool-max-idle (256) idle per backend, each for --pool-idle-ms (15 s); a connection
        // is idle only between two calls, so under the bench's load neither cap binds there,
        // and the simulator's pool (service.NAME.pool, 10000) has none. 20000 here: none
        // either (the JDK closes an idle one after its own 5 s keep-alive).
        if (System.getProperty("http.maxConnections") == null) System.setProperty("http.maxConnections", "20000");
        // No sim key: an answer closed before its end closes its connection. The JDK's default
        // (512 kB) hands such a connection to its Keep-Alive-SocketCleaner, one more platform
        // thread, to drain it back into the cache; only a cut call (Cut) closes one early.
        System.setProperty("http.KeepAlive.remainingData", "0");
        if (!cfg.pool) // service.NAME.pool = 0: HttpClient sends Connection: close (others: SocketDownstream)
            System.setProperty("jdk.httpclient.allowRestrictedHeaders", "connection");
    }

    /** The start-up line's note for each Pin, in its order. */
    static final String[] PIN_NOTES = {"", ", calls inside synchronized", ", calls inside a native frame (pinned)"};

    /** The root cause of the last SEVERE thing Tomcat logged, for our one-line messages. */
    static volatile String lastProblem = "unknown error";

    /**
     * Tomcat logs through java.util.logging: INFO lines at start and stack traces for what we
     * report ourselves in one line. Keep it silent but remember its last complaint.
     */
    static void quietLogging() {
        Logger root = Logger.getLogger("");
        for (var h : root.getHandlers()) root.removeHandler(h);
        root.setLevel(Level.SEVERE);
        root.addHandler(new java.util.logging.Handler() {
            @Override public void publish(java.util.logging.LogRecord r) {
                Throwable t = r.getThrown();
                while (t != null && t.getCause() != null) t = t.getCause();
                lastProblem = t != null ? t.getMessage() : r.getMessage();
            }

            @Override public void flush() { }

            @Override public void close() { }
        });
    }

    public static void main(String[] args) throws Exception {
        Config cfg;
        try {
            if (args.length > 0 && args[0].equals("drip")) {
                Drip.main(args);
                return;
            }
            if (args.length > 0 && args[0].equals("time-auth")) {
                TimeAuth.main(args);
                return;
            }
            cfg = parseArgs(args);
        } catch (UsageError e) {
            System.err.println("aggregator: " + e.getMessage() + " (try --help)");
            System.exit(2);
            return;
        }
        if (cfg == null) {
            printUsage();
            return;
        }
        configureJdk(cfg);
        quietLogging();

        Path baseDir = Files.createTempDirectory("aggregator-tomcat-");
        Metrics metrics = new Metrics();
        NativeFrame nativeFrame = null;
        if (cfg.pin == Pin.NATIVE) {
            try {
                nativeFrame = new NativeFrame();
            } catch (ReflectiveOperationException | RuntimeException e) {
                Throwable why = e.getCause() != null ? e.getCause() : e;
                System.err.println("aggregator: --pin native: cannot call qsort through the FFM API: " + why);
                System.exit(1);
            }
        }
        Tomcat tomcat = tomcat(cfg, metrics, nativeFrame, baseDir);
        try {
            tomcat.start();
        } catch (Exception e) {
            System.err.println("aggregator: cannot start Tomcat: " + e);
        }
        Connector connector = tomcat.getConnector();
        if (connector.getState() != LifecycleState.STARTED || connector.getLocalPort() <= 0) {
            System.err.println("aggregator: cannot listen on 127.0.0.1:" + cfg.port + ": " + lastProblem);
            stop(tomcat, baseDir);
            System.exit(1);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("aggregator serve: stopping");
            stop(tomcat, baseDir);
        }));
        System.err.printf("aggregator serve: listening on 127.0.0.1:%d (%s%s; java %s, Tomcat %s, %s)%n",
                connector.getLocalPort(), cfg.virtual ? "virtual threads" : "platform threads", PIN_NOTES[cfg.pin.ordinal()],
                Runtime.version().feature(), org.apache.catalina.util.ServerInfo.getServerNumber(),
                cfg.clientOwnPool ? "httpclient-default" : cfg.httpClient ? "httpclient" : "urlconnection");
        if (cfg.cancelOnFailure && ScopedFanout.JDK == null)
            System.err.println("aggregator serve: ?parallel=1 joins all its calls (--on-failure wait):"
                    + " cancelling needs JDK 25's StructuredTaskScope and --enable-preview");
        tomcat.getServer().await(); // until the JVM is told to stop (SIGTERM, SIGINT)
    }

    static void stop(Tomcat tomcat, Path baseDir) {
        try {
            tomcat.stop();
            tomcat.destroy();
        } catch (Exception e) {
            // stopping anyway
        }
        try (Stream<Path> s = Files.walk(baseDir)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // a temporary directory left behind
        }
    }
}

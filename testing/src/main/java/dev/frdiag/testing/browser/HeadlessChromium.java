package dev.frdiag.testing.browser;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.ConnectException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A headless Chromium driven through ChromeDriver's W3C WebDriver endpoint on 127.0.0.1: open a page, run a script,
 * click, take a screenshot, read the console's errors. Only the few commands page tests need, spoken over
 * {@link HttpClient}; Debian's {@code chromium} and {@code chromium-driver} packages provide the binaries.
 */
public final class HeadlessChromium implements AutoCloseable {
  /** Where Debian's packages put the browser and its driver. */
  public static final Path CHROMIUM = Path.of("/usr/bin/chromium");
  public static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Process driver;
  private final URI base;
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final String session;

  /** Why the browser cannot run here, or empty when it can. */
  public static Optional<String> missing() {
    for (Path p : List.of(CHROMIUM, CHROMEDRIVER)) {
      if (!Files.isExecutable(p)) {
        return Optional.of(p + " is not installed: apt-get install chromium chromium-driver (the build's "
            + "install-browser step does this when it runs as root)");
      }
    }
    return Optional.empty();
  }

  /** Starts ChromeDriver and a headless browser whose window is {@code width} × {@code height} CSS pixels. */
  public static HeadlessChromium start(int width, int height) throws IOException, InterruptedException {
    missing().ifPresent(reason -> {
      throw new IllegalStateException(reason);
    });
    return new HeadlessChromium(width, height);
  }

  private HeadlessChromium(int width, int height) throws IOException, InterruptedException {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    driver = new ProcessBuilder(CHROMEDRIVER.toString(), "--port=" + port, "--allowed-ips=127.0.0.1")
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    base = URI.create("http://127.0.0.1:" + port);
    awaitReady();
    ObjectNode options = JSON.createObjectNode().put("binary", CHROMIUM.toString());
    options.putArray("args").add("--headless=new").add("--no-sandbox").add("--disable-gpu")
        .add("--disable-dev-shm-usage").add("--window-size=" + width + "," + height);
    ObjectNode always = JSON.createObjectNode().put("browserName", "chrome");
    always.set("goog:chromeOptions", options);
    always.putObject("goog:loggingPrefs").put("browser", "ALL");
    ObjectNode caps = JSON.createObjectNode();
    caps.putObject("capabilities").set("alwaysMatch", always);
    JsonNode created = call("POST", "/session", caps);
    session = created.path("sessionId").asText();
  }

  /** ChromeDriver answers /status once it listens; until then connections are refused. */
  private void awaitReady() throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (true) {
      try {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(base.resolve("/status")).build(),
            HttpResponse.BodyHandlers.ofString());
        if (JSON.readTree(r.body()).path("value").path("ready").asBoolean()) {
          return;
        }
      } catch (ConnectException notYet) {
        // Not listening yet.
      }
      if (!driver.isAlive() || System.nanoTime() > deadline) {
        driver.destroyForcibly();
        throw new IOException("chromedriver did not become ready on " + base);
      }
      driver.waitFor(50, TimeUnit.MILLISECONDS);
    }
  }

  private JsonNode call(String method, String path, JsonNode body) throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(60))
        .header("Content-Type", "application/json");
    b.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
        : HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)));
    HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    JsonNode value = JSON.readTree(r.body()).path("value");
    if (r.statusCode() != 200) {
      throw new IOException("WebDriver " + method + " " + path + " failed (" + r.statusCode() + "): "
          + value.path("error").asText() + ": " + value.path("message").asText());
    }
    return value;
  }

  private String at(String path) {
    return "/session/" + session + path;
  }

  /** Loads {@code url} and waits until the page has loaded. */
  public void open(String url) throws IOException, InterruptedException {
    call("POST", at("/url"), JSON.createObjectNode().put("url", url));
  }

  /** Runs {@code js} in the page (its {@code return} value comes back as JSON). */
  public JsonNode script(String js) throws IOException, InterruptedException {
    ObjectNode body = JSON.createObjectNode().put("script", js);
    body.putArray("args");
    return call("POST", at("/execute/sync"), body);
  }

  /** Clicks the first element {@code css} selects, as a person would (through its click handlers). */
  public void click(String css) throws IOException, InterruptedException {
    ObjectNode body = JSON.createObjectNode().put("script", "const e = document.querySelector(arguments[0]);"
        + " if (!e) { return false; } e.click(); return true;");
    body.putArray("args").add(css);
    if (!call("POST", at("/execute/sync"), body).asBoolean()) {
      throw new IOException("nothing on the page matches " + css);
    }
  }

  /** The viewport as PNG, written to {@code file}. */
  public Path screenshot(Path file) throws IOException, InterruptedException {
    byte[] png = Base64.getDecoder().decode(call("GET", at("/screenshot"), null).asText());
    Files.createDirectories(file.toAbsolutePath().getParent());
    Files.write(file, png);
    return file;
  }

  /** The console's errors (and uncaught exceptions) since the last call. */
  public List<String> consoleErrors() throws IOException, InterruptedException {
    JsonNode entries = call("POST", at("/se/log"), JSON.createObjectNode().put("type", "browser"));
    List<String> errors = new ArrayList<>();
    for (JsonNode e : entries) {
      if (e.path("level").asText().equals("SEVERE")) {
        errors.add(e.path("message").asText());
      }
    }
    return errors;
  }

  @Override
  public void close() {
    try {
      if (session != null) {
        call("DELETE", "/session/" + session, null);
      }
    } catch (IOException | InterruptedException ignored) {
      // The driver is stopped below either way.
    } finally {
      driver.destroy();
      try {
        if (!driver.waitFor(5, TimeUnit.SECONDS)) {
          driver.destroyForcibly();
        }
      } catch (InterruptedException e) {
        driver.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}

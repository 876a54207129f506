package dev.frdiag.testing.metrics;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/** A daemon's Prometheus endpoint on loopback, scraped as Prometheus would and parsed. */
public final class PrometheusScrape {
  /**
   * One client for every scrape, as Prometheus keeps one connection to a target: a client per scrape left a
   * connection open for each, and the daemon bounds the connections one client address may hold.
   */
  private static final HttpClient CLIENT = HttpClient.newHttpClient();

  private PrometheusScrape() {}

  /**
   * Every sample of {@code http://127.0.0.1:PORT/metrics}, by name and labels as written.
   *
   * @throws IllegalStateException when the endpoint does not answer 200 with the text format
   */
  public static Map<String, Double> samples(int port) throws IOException, InterruptedException {
    HttpResponse<String> r = CLIENT.send(HttpRequest.newBuilder(URI.create(
        "http://127.0.0.1:" + port + "/metrics")).timeout(Duration.ofSeconds(5)).build(),
        HttpResponse.BodyHandlers.ofString());
    String type = r.headers().firstValue("content-type").orElse("");
    if (r.statusCode() != 200 || !type.startsWith("text/plain")) {
      throw new IllegalStateException("metrics endpoint answered " + r.statusCode() + " with '" + type + "'");
    }
    Map<String, Double> samples = new HashMap<>();
    for (String line : r.body().split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      samples.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
    }
    return samples;
  }
}

package dev.frdiag.daemon.alert;

import java.net.URI;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.util.Locale;
import java.util.Objects;

/**
 * Where reports are sent, in which format, for which jobs.
 *
 * @param jobs a glob over job ids ({@code *} for all, {@code llama-*}, …)
 */
public record AlertTarget(Kind kind, URI url, String jobs) {
  /** The formats a target speaks. */
  public enum Kind {
    /** The report's own JSON ({@code frdiag.report/v1}) POSTed as is. */
    WEBHOOK,
    /** Alertmanager's {@code /api/v2/alerts}: one alert per report. */
    ALERTMANAGER,
    /** Slack's incoming-webhook {@code {"text": …}}. */
    SLACK
  }

  public AlertTarget {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(jobs, "jobs");
    if (!"http".equals(url.getScheme()) && !"https".equals(url.getScheme())) {
      throw new IllegalArgumentException("alert URL " + url + " is not http(s)");
    }
  }

  /**
   * Parses {@code KIND=URL} or {@code KIND=URL,jobs=GLOB}, e.g. {@code slack=https://hooks.slack.com/…,jobs=llama-*}.
   *
   * @throws IllegalArgumentException naming what is wrong
   */
  public static AlertTarget parse(String spec) {
    int eq = spec.indexOf('=');
    if (eq < 0) {
      throw new IllegalArgumentException("alert '" + spec + "' is not KIND=URL[,jobs=GLOB] (KIND: webhook, "
          + "alertmanager, slack)");
    }
    Kind kind;
    try {
      kind = Kind.valueOf(spec.substring(0, eq).trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("alert kind '" + spec.substring(0, eq) + "' is not one of webhook, "
          + "alertmanager, slack");
    }
    String rest = spec.substring(eq + 1);
    String jobs = "*";
    int comma = rest.lastIndexOf(",jobs=");
    if (comma >= 0) {
      jobs = rest.substring(comma + ",jobs=".length());
      rest = rest.substring(0, comma);
    }
    try {
      return new AlertTarget(kind, URI.create(rest.trim()), jobs);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("alert '" + spec + "': " + e.getMessage(), e);
    }
  }

  /** True when reports of {@code job} go to this target. */
  public boolean wants(String job) {
    PathMatcher m = FileSystems.getDefault().getPathMatcher("glob:" + jobs);
    return m.matches(Path.of(job));
  }

  @Override
  public String toString() {
    // Webhook URLs carry secrets in their path (Slack's do): only the host is shown.
    return kind.name().toLowerCase(Locale.ROOT) + "@" + url.getHost();
  }
}

package dev.frdiag.daemon.fleet;

import dev.frdiag.proto.v1.Symptom;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Where one part stands, as one caller may see it: its score and the hangs and jobs behind it.
 *
 * @param score the sum over the distinct jobs it was named in of {@code 0.5^(age / half-life)}, age from each job's
 *     newest report naming it: a job counts at most 1 however many reports it left
 * @param jobs distinct jobs
 * @param incidents reports naming it (hangs)
 * @param asCulprit of those, the ones that blamed it; the rest marked it
 * @param symptoms hangs by symptom, most first
 * @param recent the newest reports naming it, newest first (a few per job)
 * @param alerting whether the score reaches the alert score
 * @param asOf when the score was taken
 */
public record Standing(Part part, double score, int jobs, int incidents, int asCulprit, Instant first,
    Instant last, Map<Symptom, Integer> symptoms, List<Incident> recent, boolean alerting, Instant asOf) {
  private static final Pattern SAFE_HOST = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,254}");

  public Standing {
    Objects.requireNonNull(part, "part");
    symptoms = Map.copyOf(symptoms);
    recent = List.copyOf(recent);
  }

  /**
   * One report that named the part.
   *
   * @param culprit whether it blamed the part (else a finding marked it)
   */
  public record Incident(String reportId, String job, Instant at, Symptom symptom, boolean culprit) {}

  /** Hangs that only marked the part. */
  public int asMarked() {
    return incidents - asCulprit;
  }

  /**
   * What the part did, in words: {@code culprit in 3 hangs of 3 jobs in 7 days, GPU_STALL ×2, FABRIC ×1}.
   */
  public String summary() {
    String role = asCulprit == incidents ? "culprit in " : asCulprit == 0 ? "marked in "
        : "culprit or marked in ";
    long days = Math.max(1, (long) Math.ceil(Duration.between(first, asOf).toMillis() / 86_400_000.0));
    StringBuilder b = new StringBuilder(role).append(incidents).append(incidents == 1 ? " hang" : " hangs");
    if (asCulprit > 0 && asCulprit < incidents) {
      b.append(" (").append(asCulprit).append(" as culprit)");
    }
    b.append(" of ").append(jobs).append(jobs == 1 ? " job" : " jobs").append(" in ").append(days)
        .append(days == 1 ? " day" : " days");
    symptomsMostFirst().forEach(e -> b.append(", ").append(e.getKey()).append(" \u00d7").append(e.getValue()));
    return b.toString();
  }

  /** The hangs by symptom, the most frequent first (ties in the enum's order). */
  public List<Map.Entry<Symptom, Integer>> symptomsMostFirst() {
    return symptoms.entrySet().stream()
        .sorted(Map.Entry.<Symptom, Integer>comparingByValue().reversed().thenComparing(Map.Entry.comparingByKey()))
        .toList();
  }

  /**
   * Slurm's line to drain the part's host, with the summary as its reason; empty when the host's name is not one a
   * shell line can carry as is.
   */
  public String drain() {
    if (!SAFE_HOST.matcher(part.host()).matches()) {
      return "";
    }
    String reason = ("frdiag: " + part.display() + " " + summary()).replace("\u00d7", "x")
        .chars().filter(c -> c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '$' && c != '`')
        .mapToObj(c -> String.valueOf((char) c)).collect(Collectors.joining());
    return "scontrol update nodename=" + part.host() + " state=drain reason=\"" + reason + "\"";
  }
}

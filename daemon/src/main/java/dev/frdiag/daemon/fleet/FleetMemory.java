package dev.frdiag.daemon.fleet;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.daemon.store.StoredReport;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Per-part tallies of the reports read so far, and the scores they give. Holds, per part, a tally per job (its
 * newest few reports by id) for at most {@link FleetSettings#jobsPerPart()} jobs, and at most
 * {@link FleetSettings#maxParts()} parts: its size follows the fleet, not the number of reports. Time is always
 * given by the caller. Thread-safe.
 */
public final class FleetMemory {
  /** Reports kept by id per job and part, for links and for {@code --since}. */
  static final int RECENT_PER_JOB = 4;
  /** Reports a standing lists by id, newest first. */
  static final int RECENT_SHOWN = 32;
  private static final Symptom[] SYMPTOMS = Symptom.values();

  private final FleetSettings settings;
  private final double halfLifeMs;
  private final Object lock = new Object();
  /** In the order they were last touched, so the one touched longest ago is forgotten first. */
  @GuardedBy("lock")
  private final LinkedHashMap<Part, Tally> parts = new LinkedHashMap<>(1024, 0.75f, true);
  @GuardedBy("lock")
  private long reportsRead;

  public FleetMemory(FleetSettings settings) {
    this.settings = settings;
    this.halfLifeMs = settings.halfLife().toMillis();
  }

  /** What a report left on one part's tally for one job. */
  private static final class JobTally {
    long firstMs = Long.MAX_VALUE;
    long lastMs = Long.MIN_VALUE;
    int incidents;
    int asCulprit;
    final int[] symptoms = new int[SYMPTOMS.length];
    /** Newest first. */
    final List<Standing.Incident> recent = new ArrayList<>(RECENT_PER_JOB + 1);
  }

  /** One part: its jobs by name, plus what the jobs past the per-part bound left, folded into numbers. */
  private static final class Tally {
    final Map<String, JobTally> jobs = new HashMap<>();
    /** The folded jobs' score as of {@link #foldedAtMs}. */
    double folded;
    long foldedAtMs = Long.MIN_VALUE;
    int foldedJobs;
    int foldedIncidents;
    int foldedCulprit;
    long foldedFirstMs = Long.MAX_VALUE;
    final int[] foldedSymptoms = new int[SYMPTOMS.length];
    boolean alerted;
  }

  /**
   * Reads one report. With {@code alert}, returns the parts whose score (as of {@code now}) reached the alert score
   * with it, each once until its score falls below again; without, only reads it (the rebuild at start, which must
   * not alert on history: {@link #settle} then marks the parts already there as alerted).
   */
  public List<Standing> add(StoredReport report, Instant now, boolean alert) {
    Map<Part, Sightings.Role> seen = Sightings.of(report);
    if (seen.isEmpty()) {
      return List.of();
    }
    long at = report.createdAt().toEpochMilli();
    long nowMs = now.toEpochMilli();
    List<Standing> crossed = new ArrayList<>();
    synchronized (lock) {
      reportsRead++;
      for (Map.Entry<Part, Sightings.Role> e : seen.entrySet()) {
        Tally t = parts.get(e.getKey());
        if (t == null) {
          t = new Tally();
          parts.put(e.getKey(), t);
          if (parts.size() > settings.maxParts()) {
            Iterator<Part> eldest = parts.keySet().iterator();
            eldest.next();
            eldest.remove();
          }
        }
        if (!alert) {
          // The rebuild scores each part once, at the end (settle): a score per report is 64 jobs' weights.
          record(t, report, at, e.getValue() == Sightings.Role.CULPRIT);
          continue;
        }
        if (score(t, nowMs, j -> true, true) < settings.alertScore()) {
          t.alerted = false;
        }
        record(t, report, at, e.getValue() == Sightings.Role.CULPRIT);
        boolean above = score(t, nowMs, j -> true, true) >= settings.alertScore();
        if (above && !t.alerted) {
          crossed.add(standing(e.getKey(), t, now, j -> true, true, Long.MIN_VALUE));
        }
        t.alerted = above;
      }
    }
    return crossed;
  }

  /**
   * Takes back what {@code report} added when it was read as a hang, now that the hang ended by itself: each part it
   * named loses that incident. One no longer among its job's last few on the part (or folded into the part's
   * anonymous numbers) stays counted: a recovery comes seconds after its report, long before either.
   */
  public void retract(StoredReport report) {
    Map<Part, Sightings.Role> named = Sightings.named(report);
    synchronized (lock) {
      for (Map.Entry<Part, Sightings.Role> e : named.entrySet()) {
        Tally t = parts.get(e.getKey());
        JobTally j = t == null ? null : t.jobs.get(report.job());
        if (j == null || !j.recent.removeIf(i -> i.reportId().equals(report.reportId()))) {
          continue;
        }
        j.incidents--;
        j.asCulprit -= e.getValue() == Sightings.Role.CULPRIT ? 1 : 0;
        j.symptoms[report.symptom().ordinal()]--;
        if (j.incidents == 0) {
          t.jobs.remove(report.job());
        }
        if (t.jobs.isEmpty() && t.foldedJobs == 0) {
          parts.remove(e.getKey());
        }
      }
    }
  }

  /**
   * Marks every part at the alert score as of {@code now} as alerted, so that what was read without alerting (the
   * store at start) is not alerted on later.
   */
  public void settle(Instant now) {
    long nowMs = now.toEpochMilli();
    synchronized (lock) {
      for (Tally t : parts.values()) {
        t.alerted = score(t, nowMs, j -> true, true) >= settings.alertScore();
      }
    }
  }

  @GuardedBy("lock")
  private void record(Tally t, StoredReport report, long at, boolean culprit) {
    JobTally j = t.jobs.get(report.job());
    if (j == null) {
      j = new JobTally();
      t.jobs.put(report.job(), j);
    }
    j.firstMs = Math.min(j.firstMs, at);
    j.lastMs = Math.max(j.lastMs, at);
    j.incidents++;
    j.asCulprit += culprit ? 1 : 0;
    j.symptoms[report.symptom().ordinal()]++;
    j.recent.add(new Standing.Incident(report.reportId(), report.job(), report.createdAt(), report.symptom(),
        culprit));
    j.recent.sort(Comparator.comparing(Standing.Incident::at).reversed());
    if (j.recent.size() > RECENT_PER_JOB) {
      j.recent.remove(RECENT_PER_JOB);
    }
    if (t.jobs.size() > settings.jobsPerPart()) {
      fold(t);
    }
  }

  /** Folds the job seen longest ago into the anonymous numbers. */
  private void fold(Tally t) {
    String oldest = null;
    long oldestMs = Long.MAX_VALUE;
    for (Map.Entry<String, JobTally> e : t.jobs.entrySet()) {
      if (e.getValue().lastMs < oldestMs) {
        oldest = e.getKey();
        oldestMs = e.getValue().lastMs;
      }
    }
    JobTally j = t.jobs.remove(oldest);
    long ref = Math.max(t.foldedAtMs, j.lastMs);
    t.folded = (t.foldedJobs == 0 ? 0 : t.folded * weight(ref - t.foldedAtMs)) + weight(ref - j.lastMs);
    t.foldedAtMs = ref;
    t.foldedJobs++;
    t.foldedIncidents += j.incidents;
    t.foldedCulprit += j.asCulprit;
    t.foldedFirstMs = Math.min(t.foldedFirstMs, j.firstMs);
    for (int i = 0; i < SYMPTOMS.length; i++) {
      t.foldedSymptoms[i] += j.symptoms[i];
    }
  }

  /** What an incident {@code ageMs} old weighs: 1 when new, half after each half-life. */
  private double weight(long ageMs) {
    return ageMs <= 0 ? 1.0 : Math.pow(0.5, ageMs / halfLifeMs);
  }

  private double score(Tally t, long nowMs, Predicate<String> mayRead, boolean readsAll) {
    double s = 0;
    for (Map.Entry<String, JobTally> e : t.jobs.entrySet()) {
      if (mayRead.test(e.getKey())) {
        s += weight(nowMs - e.getValue().lastMs);
      }
    }
    if (readsAll && t.foldedJobs > 0) {
      s += t.folded * weight(nowMs - t.foldedAtMs);
    }
    return s;
  }

  /**
   * Every part named by a job the caller may read, scored as of {@code now}, highest first.
   *
   * @param mayRead which jobs' incidents the caller may see
   * @param readsAll whether it may read every job: only then do jobs folded out of the per-part bound count
   * @param since only reports from then on count (null: all); the folded jobs then do not
   * @param minIncidents parts named in fewer hangs (of those counted) are left out
   */
  public List<Standing> standings(Instant now, Predicate<String> mayRead, boolean readsAll, Instant since,
      int minIncidents) {
    long sinceMs = since == null ? Long.MIN_VALUE : since.toEpochMilli();
    List<Standing> out = new ArrayList<>();
    synchronized (lock) {
      for (Map.Entry<Part, Tally> e : parts.entrySet()) {
        Standing s = standing(e.getKey(), e.getValue(), now, mayRead, readsAll, sinceMs);
        if (s != null && s.incidents() >= Math.max(1, minIncidents)) {
          out.add(s);
        }
      }
    }
    out.sort(Comparator.comparingDouble(Standing::score).reversed()
        .thenComparing(Comparator.comparingInt(Standing::incidents).reversed())
        .thenComparing(Standing::part));
    return out;
  }

  /** One part as the caller may see it; null when nothing of it is visible. */
  @GuardedBy("lock")
  private Standing standing(Part part, Tally t, Instant now, Predicate<String> mayRead, boolean readsAll,
      long sinceMs) {
    long nowMs = now.toEpochMilli();
    int jobs = 0;
    int incidents = 0;
    int culprit = 0;
    long first = Long.MAX_VALUE;
    long last = Long.MIN_VALUE;
    double score = 0;
    int[] symptoms = new int[SYMPTOMS.length];
    List<Standing.Incident> recent = new ArrayList<>();
    for (Map.Entry<String, JobTally> e : t.jobs.entrySet()) {
      JobTally j = e.getValue();
      if (!mayRead.test(e.getKey()) || j.lastMs < sinceMs) {
        continue;
      }
      jobs++;
      score += weight(nowMs - j.lastMs);
      last = Math.max(last, j.lastMs);
      if (j.firstMs >= sinceMs) {
        incidents += j.incidents;
        culprit += j.asCulprit;
        first = Math.min(first, j.firstMs);
        for (int i = 0; i < symptoms.length; i++) {
          symptoms[i] += j.symptoms[i];
        }
      } else {
        // Older reports of this job fall before --since: count the ones kept by id.
        for (Standing.Incident i : j.recent) {
          if (i.at().toEpochMilli() >= sinceMs) {
            incidents++;
            culprit += i.culprit() ? 1 : 0;
            first = Math.min(first, i.at().toEpochMilli());
            symptoms[i.symptom().ordinal()]++;
          }
        }
      }
      for (Standing.Incident i : j.recent) {
        if (i.at().toEpochMilli() >= sinceMs) {
          recent.add(i);
        }
      }
    }
    if (readsAll && sinceMs == Long.MIN_VALUE && t.foldedJobs > 0) {
      jobs += t.foldedJobs;
      incidents += t.foldedIncidents;
      culprit += t.foldedCulprit;
      score += t.folded * weight(nowMs - t.foldedAtMs);
      first = Math.min(first, t.foldedFirstMs);
      last = Math.max(last, t.foldedAtMs);
      for (int i = 0; i < symptoms.length; i++) {
        symptoms[i] += t.foldedSymptoms[i];
      }
    }
    if (jobs == 0) {
      return null;
    }
    Map<Symptom, Integer> bySymptom = new EnumMap<>(Symptom.class);
    for (int i = 0; i < symptoms.length; i++) {
      if (symptoms[i] > 0) {
        bySymptom.put(SYMPTOMS[i], symptoms[i]);
      }
    }
    recent.sort(Comparator.comparing(Standing.Incident::at).reversed().thenComparing(Standing.Incident::reportId));
    if (recent.size() > RECENT_SHOWN) {
      recent.subList(RECENT_SHOWN, recent.size()).clear();
    }
    return new Standing(part, score, jobs, incidents, culprit, Instant.ofEpochMilli(first),
        Instant.ofEpochMilli(last), bySymptom, recent, score >= settings.alertScore(), now);
  }

  /** Parts kept now. */
  public int parts() {
    synchronized (lock) {
      return parts.size();
    }
  }

  /** Reports read that named at least one part. */
  public long reportsRead() {
    synchronized (lock) {
      return reportsRead;
    }
  }

  /** The settings it scores by. */
  public FleetSettings settings() {
    return settings;
  }
}

package dev.frdiag.analysis;

import java.util.List;

/**
 * One fact a verdict rests on.
 *
 * @param kind what sort of fact: "not_issued", "not_started", "completion_lag", "waiting", "rank_lost",
 *     "no_snapshot", "signature_mismatch", "all_started_none_completed", "all_issued_none_completed",
 *     "cascade", "rank_event", "progressing"
 * @param ranks the global ranks it is about, sorted
 * @param detail one sentence a person can check against the raw data
 */
public record Evidence(String kind, List<Integer> ranks, String detail) {
  public Evidence {
    ranks = ranks.stream().sorted().toList();
  }
}

package dev.frdiag.daemon.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.daemon.settings.Limits;
import dev.frdiag.proto.v1.ContextFinding;
import dev.frdiag.proto.v1.NodeContext;
import dev.frdiag.proto.v1.RankIdentity;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Node context for jobs nobody connected for, and jobs nobody runs any more, are bounded and expire. */
class JobRegistryTest {
  private static final long S = 1_000_000_000L;

  private static NodeContext context(String job, String host, int detailBytes) {
    return NodeContext.newBuilder().setJobId(job).setHostname(host)
        .addFindings(ContextFinding.newBuilder().setDetail("x".repeat(detailBytes))).build();
  }

  @Test
  void contextForJobsNoRankConnectedForIsBoundedInJobsAndBytesAndExpires() {
    JobRegistry registry = new JobRegistry(16, Limits.builder().maxEarlyContextJobs(2)
        .maxContextBytesPerJob(64 * 1024).jobIdleExpiry(Duration.ofMinutes(10)).build());
    registry.context(context("a", "h", 10), 0);
    registry.context(context("b", "h", 10), 0);
    assertThatThrownBy(() -> registry.context(context("c", "h", 10), 0))
        .isInstanceOf(LimitExceededException.class)
        .hasMessage("node context is already waiting for 2 jobs that no rank has connected for; context for job c "
            + "is refused");
    assertThatThrownBy(() -> registry.context(context("a", "h2", 70 * 1024), 0))
        .isInstanceOf(LimitExceededException.class).hasMessageContaining("more than its limit of 65536");

    registry.expireIdle(11 * 60 * S);
    assertThat(registry.jobsAwaitingContext()).isZero();
    registry.context(context("c", "h", 10), 11 * 60 * S);
    assertThat(registry.jobsAwaitingContext()).isEqualTo(1);
  }

  @Test
  void aJobWithNoRankConnectedExpiresAfterTheIdleTimeAndALiveOneNever() {
    JobRegistry registry = new JobRegistry(16, Limits.builder().jobIdleExpiry(Duration.ofMinutes(10)).build());
    Job gone = registry.getOrCreate("gone", 1, 0, 0);
    gone.attach(RankIdentity.newBuilder().setJobId("gone").setWorldSize(1).setPid(1).build(), List.of(),
        request -> { }, "s", 0, 0, 0);
    gone.lost(0, "s", 1 * S);
    Job live = registry.getOrCreate("live", 1, 0, 0);
    live.attach(RankIdentity.newBuilder().setJobId("live").setWorldSize(1).setPid(2).build(), List.of(),
        request -> { }, "t", 0, 0, 0);

    assertThat(registry.expireIdle(5 * 60 * S)).isEmpty();
    assertThat(registry.expireIdle(11 * 60 * S)).containsExactly("gone");
    assertThat(registry.find("gone")).isEmpty();
    assertThat(registry.find("live")).isPresent();
  }

  @Test
  void atTheJobLimitTheJobIdleLongestIsForgottenForANewOne() {
    JobRegistry registry = new JobRegistry(16, Limits.builder().maxJobs(3).build());
    List<String> ids = List.of("live", "older", "newer");
    for (int i = 0; i < ids.size(); i++) {
      Job job = registry.getOrCreate(ids.get(i), 1, 0, i * S);
      job.attach(RankIdentity.newBuilder().setJobId(ids.get(i)).setWorldSize(1).setPid(1).build(), List.of(),
          request -> { }, "s", 0, i * S, 0);
    }
    registry.find("newer").orElseThrow().lost(0, "s", 3 * S);
    registry.find("older").orElseThrow().lost(0, "s", 3 * S);

    registry.getOrCreate("new", 1, 0, 4 * S);
    assertThat(registry.find("older")).as("last heard from at 1 s, the longest ago").isEmpty();
    assertThat(registry.find("newer")).isPresent();
    assertThat(registry.evictions()).isEqualTo(1);

    registry.getOrCreate("new2", 1, 0, 5 * S);
    assertThat(registry.all()).extracting(Job::id).containsExactlyInAnyOrder("live", "new", "new2");
    assertThat(registry.evictions()).isEqualTo(2);
  }
}

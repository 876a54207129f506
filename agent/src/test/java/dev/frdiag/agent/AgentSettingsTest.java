package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class AgentSettingsTest {
  private static AgentSettings.Builder valid() {
    return AgentSettings.builder().jobId("job1").hostname("node0").worldSize(8).localRanks(List.of(4, 5));
  }

  @Test
  void namesFilesByAppendingToThePrefixesAsPyTorchDoes() {
    AgentSettings s = valid().dumpPrefix("/tmp/trace_").pipePrefix("/run/fr/pipe_").build();
    assertThat(s.dumpFile(5)).isEqualTo(Path.of("/tmp/trace_5"));
    assertThat(s.pipe(5)).isEqualTo(Path.of("/run/fr/pipe_5.pipe"));

    AgentSettings dirs = valid().dumpPrefix("/tmp/dumps/").pipePrefix("/tmp/pipes/").build();
    assertThat(dirs.dumpFile(4)).isEqualTo(Path.of("/tmp/dumps/4"));
    assertThat(dirs.pipe(4)).isEqualTo(Path.of("/tmp/pipes/4.pipe"));
  }

  @Test
  void defaultsToPyTorchsDumpPrefixAndNoPipes() {
    AgentSettings s = valid().build();
    assertThat(s.dumpFile(3)).isEqualTo(Path.of(System.getProperty("user.home"), ".cache", "torch",
        "comm_lib_trace_rank_3"));
    assertThat(s.pipe(3)).isNull();
    assertThat(valid().pipePrefix("").build().pipePrefix()).isNull();
    assertThat(s.pollInterval()).isEqualTo(Duration.ofSeconds(1));
    assertThat(s.dumpWait()).isEqualTo(Duration.ofSeconds(15));
    assertThat(s.maxDumpBytes()).isEqualTo(64L << 20);
  }

  @Test
  void discoveredRanksNeedNoListAndMayTakeTheirWorldSize() {
    AgentSettings s = valid().localRanks(List.of()).worldSize(0).discoverRanks(true).runId("").build();
    assertThat(s.discoverRanks()).isTrue();
    assertThat(s.worldSize()).isZero();
    assertThat(s.runId()).isNull();
    assertThat(s.withWorldSize(16).worldSize()).isEqualTo(16);
    assertThatThrownBy(() -> valid().discoverRanks(true).build())
        .hasMessage("local ranks are either listed or discovered, not both");
    assertThatThrownBy(() -> valid().localRanks(List.of()).worldSize(-1).discoverRanks(true).build())
        .hasMessage("world size must be at least 1, got -1");
  }

  @Test
  void refusesInvalidValuesWithOneClearMessage() {
    assertThatThrownBy(() -> valid().jobId("").build()).hasMessage("a job id is required");
    assertThatThrownBy(() -> valid().jobId("my job").build())
        .hasMessage("invalid job id 'my job': use 1-128 of A-Z a-z 0-9 . _ - starting with a letter or digit");
    assertThatThrownBy(() -> valid().worldSize(0).build()).hasMessage("world size must be at least 1, got 0");
    assertThatThrownBy(() -> valid().localRanks(List.of()).build())
        .hasMessage("at least one local rank is required");
    assertThatThrownBy(() -> valid().localRanks(List.of(7, 8)).build())
        .hasMessage("local rank 8 is outside world size 8 (ranks 0-7)");
    assertThatThrownBy(() -> valid().localRanks(List.of(1, 2, 1)).build())
        .hasMessage("local rank 1 is listed twice");
    assertThatThrownBy(() -> valid().pollInterval(Duration.ZERO).build())
        .hasMessage("poll interval must be positive, got PT0S");
    assertThatThrownBy(() -> valid().dumpWait(Duration.ofSeconds(-1)).build())
        .hasMessage("dump wait must be positive, got PT-1S");
    assertThatThrownBy(() -> valid().dumpPrefix("").build()).hasMessage("dump prefix must not be empty");
    assertThatThrownBy(() -> valid().maxDumpBytes(0).build()).hasMessageStartingWith("max dump bytes must be");
    assertThatThrownBy(() -> valid().workerSocket("/tmp/torch_worker.sock").build())
        .hasMessage("worker socket '/tmp/torch_worker.sock' must contain {rank}: each rank serves its own socket,"
            + " such as /tmp/torch_worker_{rank}.sock");
    assertThatThrownBy(() -> valid().progressInterval(Duration.ZERO).build())
        .hasMessage("progress interval must be positive, got PT0S");
  }
}

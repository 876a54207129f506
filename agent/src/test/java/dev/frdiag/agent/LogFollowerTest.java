package dev.frdiag.agent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.readers.pytorch.WatchdogLine;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Following a training log through what launchers and log rotation do to it. */
class LogFollowerTest {
  @TempDir
  Path dir;

  private static final String TIMEOUT = "[rank3]:[E1213 17:24:49.082111648 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog"
      + " caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1048576, "
      + "NumelOut=1048576, Timeout(ms)=600000) ran for 600007 milliseconds before timing out.\n";

  @Test
  void aLogTruncatedAndRewrittenPastItsOldSizeBetweenTwoPollsIsReadFromItsStart() throws Exception {
    Path log = dir.resolve("train.log");
    Files.writeString(log, "step 1 | loss 2.5\n".repeat(20));
    List<WatchdogLine> seen = new ArrayList<>();
    LogFollower follower = new LogFollower(log, (line, file) -> seen.add(line));

    // The launcher restarts the job and rewrites the same file, longer than it was, before the next poll.
    Files.writeString(log, TIMEOUT + "restarted\n".repeat(100));
    follower.poll();

    assertThat(seen).extracting(WatchdogLine::seq).containsExactly(42L);
  }

  @Test
  void linesAppendedAfterStartAreReadOnceAndEarlierOnesAreHistory() throws Exception {
    Path log = dir.resolve("train.log");
    Files.writeString(log, TIMEOUT);
    List<WatchdogLine> seen = new ArrayList<>();
    LogFollower follower = new LogFollower(log, (line, file) -> seen.add(line));
    follower.poll();
    assertThat(seen).as("written before the agent started").isEmpty();

    Files.writeString(log, TIMEOUT.replace("SeqNum=42", "SeqNum=43"), java.nio.file.StandardOpenOption.APPEND);
    follower.poll();
    follower.poll();
    assertThat(seen).extracting(WatchdogLine::seq).containsExactly(43L);
  }
}

package dev.frdiag.readers.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.readers.nccl.LinePrefix.Level;
import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class LinePrefixTest {
  private final LinePrefix prefix = new LinePrefix(100);

  @Test
  void readsHostPidTidDeviceAndLevelOfAnInfoLine() {
    String line = "node0:13571:13572 [3] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0";

    assertThat(prefix.next(line, false)).isTrue();
    assertThat(prefix.host()).isEqualTo("node0");
    assertThat(prefix.pid()).isEqualTo(13571);
    assertThat(prefix.tid()).isEqualTo(13572);
    assertThat(prefix.device()).isEqualTo(3);
    assertThat(prefix.level()).isEqualTo(Level.INFO);
    assertThat(line.substring(prefix.messageStart())).startsWith("Channel 00/0");
    assertThat(prefix.timestamp()).isNull();
    assertThat(prefix.noiseEnd()).isZero();
    assertThat(prefix.location()).isEmpty();
  }

  @Test
  void aLineWithoutPrefixCarriesNothingOfTheLineBefore() {
    assertThat(prefix.next("[2025-02-03 04:05:06] gpu7:11:12 [5] net.cc:1 NCCL WARN NET/IB: x", false)).isTrue();
    String bare = "socketProgressOpt: Call to recv from 10.0.0.1<3> failed : Connection reset by peer";

    assertThat(prefix.next(bare, false)).isFalse();
    assertThat(prefix.host()).isEmpty();
    assertThat(prefix.pid()).isEqualTo(-1);
    assertThat(prefix.tid()).isEqualTo(-1);
    assertThat(prefix.device()).isEqualTo(-1);
    assertThat(prefix.location()).isEmpty();
    assertThat(prefix.timestamp()).isNull();
    assertThat(prefix.noiseEnd()).isZero();
    prefix.quoteFrom(18);
    assertThat(prefix.quote()).isEqualTo(bare.substring(18));
    assertThat(prefix.next(bare, false)).isFalse();
    assertThat(prefix.quote()).isEqualTo(bare);
  }

  @Test
  void readsTheSourceLocationOfWarnAndTraceLines() {
    assertThat(prefix.next("ng30903:3063025:3066048 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection"
        + " closed by remote peer ng30903-ib<51159>", false)).isTrue();
    assertThat(prefix.level()).isEqualTo(Level.WARN);
    assertThat(prefix.device()).isZero();
    assertThat(prefix.location()).isEqualTo("misc/socket.cc:49");

    assertThat(prefix.next("gpu1:42:43 [7] 1722.481934 enqueue.cc:1023 NCCL TRACE ncclGroupEnd", false)).isTrue();
    assertThat(prefix.level()).isEqualTo(Level.TRACE);
    assertThat(prefix.device()).isEqualTo(7);
    assertThat(prefix.location()).isEqualTo("1722.481934 enqueue.cc:1023");
  }

  @Test
  void readsApiCallLinesWhichHaveNoDevice() {
    String line = "gpu1:42:43 NCCL CALL ncclSend(0x7f, 1024, ncclFloat, 1, 0x55d4, 0x0)";

    assertThat(prefix.next(line, false)).isTrue();
    assertThat(prefix.level()).isEqualTo(Level.CALL);
    assertThat(prefix.host()).isEqualTo("gpu1");
    assertThat(prefix.pid()).isEqualTo(42);
    assertThat(prefix.tid()).isEqualTo(43);
    assertThat(line.substring(prefix.messageStart())).startsWith("ncclSend(");
  }

  @Test
  void readsTheTimestampThat226PrintsBeforeThePrefix() {
    assertThat(prefix.next("[2025-02-03 04:05:06.789] gpu7:11:12 [5] transport/net_ib.cc:1234 NCCL WARN NET/IB:"
        + " Got async event : port error", false)).isTrue();

    assertThat(prefix.timestamp()).isEqualTo(LocalDateTime.of(2025, 2, 3, 4, 5, 6, 789_000_000));
    assertThat(prefix.host()).isEqualTo("gpu7");
    // The timestamp is NCCL's, not a launcher's: nothing before it.
    assertThat(prefix.noiseEnd()).isZero();
  }

  @Test
  void readsTheTimestampWithoutFractionAndAfterLauncherNoise() {
    assertThat(prefix.next("[1,4]<stderr>:[2025-02-03 04:05:06] gpu7:11:12 [5] NCCL INFO x", false)).isTrue();

    assertThat(prefix.timestamp()).isEqualTo(LocalDateTime.of(2025, 2, 3, 4, 5, 6));
    assertThat(prefix.noiseEnd()).isEqualTo("[1,4]<stderr>:".length());
    assertThat(prefix.launcherRank()).isEqualTo(4);
  }

  @Test
  void takesABracketedNonDateBeforeTheHostAsNoiseNotAsTimestamp() {
    assertThat(prefix.next("[worker-17 2025/02/03 04:05] gpu7:11:12 [5] NCCL INFO x", false)).isTrue();

    assertThat(prefix.timestamp()).isNull();
    assertThat(prefix.noiseEnd()).isEqualTo("[worker-17 2025/02/03 04:05] ".length());
    assertThat(prefix.launcherRank()).isEqualTo(-1);
  }

  @Test
  void readsTheRankALauncherTaggedTheLineWith() {
    assertThat(prefix.next("[1,3]<stdout>:nodeA:100:101 [3] NCCL INFO Bootstrap : Using eth0", false)).isTrue();
    assertThat(prefix.host()).isEqualTo("nodeA");
    assertThat(prefix.launcherRank()).isEqualTo(3);

    assertThat(prefix.next("[2] nodeE:500:501 [0] NCCL INFO Connected all trees", false)).isTrue();
    assertThat(prefix.launcherRank()).isEqualTo(2);

    assertThat(prefix.next("(RayWorker pid=123) nodeB:200:201 [0] NCCL INFO x", false)).isTrue();
    assertThat(prefix.host()).isEqualTo("nodeB");
    assertThat(prefix.launcherRank()).isEqualTo(-1);

    // An OpenMPI-looking tag without <stdout>/<stderr> is not one.
    assertThat(prefix.next("[1,3]nodeA:100:101 [3] NCCL INFO x", false)).isTrue();
    assertThat(prefix.launcherRank()).isEqualTo(-1);
  }

  @Test
  void takesALineCutRightAfterTheLevelWithAnEmptyMessage() {
    String line = "node0:1:2 [0] NCCL INFO";

    assertThat(prefix.next(line, false)).isTrue();
    assertThat(prefix.messageStart()).isEqualTo(line.length());
    assertThat(prefix.next(line + " ", false)).isTrue();
    assertThat(prefix.messageStart()).isEqualTo(line.length() + 1);
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "node0:1:2 [0] NCCL",
      "node0:1:2 [0] NCCL INF",
      "node0:1:2 [0] NCCL INFOrmation",
      "node0:1:2 [0] NCCL DEBUG something",
      ":2 [0] NCCL INFO cut inside the prefix",
      "1:2 [0] NCCL INFO no host",
      "node0::2 [0] NCCL INFO no pid",
      "node0:1:2 [] NCCL INFO no device",
      "node0:1:2 [123456789] NCCL INFO device too long",
      "node0:1:2 [x] NCCL INFO device not a number",
      "node0:1:2[0] NCCL INFO no space before the device",
      "node0:99999999999:2 [0] NCCL INFO pid beyond an int",
      "Using NCCL INFO as a phrase in a sentence",
      "ProcessGroupNCCL.cpp:1664 [PG 1 Rank 0] NCCL WARN lookalike"})
  void rejectsLinesThatOnlyLookLikeNcclPrefixes(String line) {
    assertThat(prefix.next(line, false)).isFalse();
  }

  @Test
  void countsEveryLineWhetherOrNotItHasAPrefix() {
    prefix.next("training step 1", false);
    prefix.next("node0:1:2 [0] NCCL INFO x", false);
    prefix.next("", false);

    assertThat(prefix.lineNumber()).isEqualTo(3);
  }

  @Test
  void internsHostNamesSoEqualHostsAreOneInstance() {
    prefix.next("dgx-a100-017:1:2 [0] NCCL INFO a", false);
    String first = prefix.host();
    prefix.next("dgx-a100-017:3:4 [1] NCCL INFO b", false);

    assertThat(prefix.host()).isSameAs(first);
  }

  @Test
  void quotesTheLineAsUtf8AndCutToNcclsBuffer() {
    String utf8 = "node0:1:2 [0] misc/a.cc:1 NCCL WARN caf\u00e9 ";
    String latin1 = new String(utf8.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
    assertThat(prefix.next(latin1, true)).isTrue();
    assertThat(prefix.quote()).isEqualTo(utf8);

    String longLine = "node0:1:2 [0] NCCL INFO " + "x".repeat(2000);
    assertThat(prefix.next(longLine, false)).isTrue();
    assertThat(prefix.quote()).isEqualTo(longLine.substring(0, LinePrefix.MAX_QUOTE));
  }

  /**
   * People replace pids with letters before posting; the line is still NCCL's, and differently anonymised processes
   * stay apart. (The WARN of NVIDIA/nccl#1814 with its pid and tid replaced as such posts show them.)
   */
  @Test
  void readsLinesWhosePidAndTidWereReplacedWithLetters() {
    String a = "[2025-07-01 10:00:00] hostname-test:XXXX:YYYY [3] transport/net_ib.cc:2451 NCCL WARN NET/IB: Got "
        + "completion from peer 10.0.0.2<35621> with status=12 opcode=0 len=0 vendor err 129 (Recv) hca mlx5_3";
    assertThat(prefix.next(a, false)).isTrue();
    assertThat(prefix.host()).isEqualTo("hostname-test");
    assertThat(prefix.level()).isEqualTo(Level.WARN);
    assertThat(prefix.timestamp()).isNotNull();
    int first = prefix.pid();
    assertThat(first).isLessThan(-1);

    assertThat(prefix.next(a.replace("XXXX:YYYY", "ZZZZ:YYYY"), false)).isTrue();
    assertThat(prefix.pid()).isLessThan(-1).isNotEqualTo(first);
    assertThat(prefix.next(a, false)).isTrue();
    assertThat(prefix.pid()).isEqualTo(first);
  }

  /** NCCL 2.2 printed no "NCCL" (pytorch/pytorch#7019, as posted). */
  @Test
  void readsNcclLinesOfVersionsThatPrintedNoNcclTag() {
    String info = "neuromancer:13802:13802 [1] INFO Using internal Network Socket";
    assertThat(prefix.next(info, false)).isTrue();
    assertThat(prefix.host()).isEqualTo("neuromancer");
    assertThat(prefix.pid()).isEqualTo(13802);
    assertThat(prefix.level()).isEqualTo(Level.INFO);
    assertThat(info.substring(prefix.messageStart())).isEqualTo("Using internal Network Socket");
    String warn = "neuromancer:13802:13802 [1] misc/ibvwrap.cu:61 WARN Failed to open libibverbs.so[.1]";
    assertThat(prefix.next(warn, false)).isTrue();
    assertThat(prefix.level()).isEqualTo(Level.WARN);
    assertThat(prefix.location()).isEqualTo("misc/ibvwrap.cu:61");
    assertThat(prefix.next("2024-01-01 12:00:00 - root - INFO - step 3", false)).isFalse();
  }

  /** People cut host, pid and tid off before posting (NVIDIA/nccl#417, as posted). */
  @Test
  void readsNcclLinesWhoseHostPidAndTidWereCutAway() {
    String line = "[0] NCCL INFO Bootstrap : Using [0]enp68s0f0:172.17.6.148<0>";
    assertThat(prefix.next(line, false)).isTrue();
    assertThat(prefix.host()).isEmpty();
    assertThat(prefix.pid()).isEqualTo(-1);
    assertThat(prefix.device()).isZero();
    assertThat(line.substring(prefix.messageStart())).startsWith("Bootstrap");
  }
}

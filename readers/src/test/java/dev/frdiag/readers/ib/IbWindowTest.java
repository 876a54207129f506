package dev.frdiag.readers.ib;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IbWindowTest {
  private static final IbPortId IB = new IbPortId("mlx5_0", 1);
  private static final IbPortId ROCE = new IbPortId("mlx5_1", 1);

  @TempDir
  Path dir;

  private FakeSysfs sysfs;
  private IbSnapshot before;

  @BeforeEach
  void firstSnapshot() throws Exception {
    sysfs = FakeSysfs.copyTo(dir);
    before = sysfs.reader().snapshot();
    sysfs.clock.advance(Duration.ofSeconds(30));
  }

  private IbWindow window() {
    return IbWindow.between(before, sysfs.reader().snapshot());
  }

  @Test
  void nothingMovingIsQuietOnEveryPort() {
    IbWindow w = window();

    assertThat(w.duration()).isEqualTo(Duration.ofSeconds(30));
    assertThat(w.findings()).extracting(IbFinding::kind).containsExactly(IbFindingKind.QUIET, IbFindingKind.QUIET);
    assertThat(w.findings().get(0).message())
        .isEqualTo("mlx5_0:1: no error, wait or retransmission counter moved in 30 s and no data was sent");
    assertThat(w.deltas().get(IB)).allMatch(d -> d.delta() == 0 && !d.atLeast());
    assertThat(w.deltas().get(IB)).extracting(IbCounterDelta::counter).doesNotContain("lifespan");
  }

  @Test
  void aLinkDownedIncreaseIsAFlap() {
    sysfs.set("mlx5_0", "counters/link_downed", "1").set("mlx5_0", "counters/port_xmit_data", "36298026861928");

    IbWindow w = window();

    assertThat(w.findings(IB)).singleElement().satisfies(f -> {
      assertThat(f.kind()).isEqualTo(IbFindingKind.LINK_FLAP);
      assertThat(f).extracting(IbFinding::counter, IbFinding::before, IbFinding::after, IbFinding::delta)
          .containsExactly("link_downed", 0L, 1L, 1L);
      assertThat(f.message()).isEqualTo("mlx5_0:1 link went down: link_downed 0 -> 1 (+1) in 30 s");
    });
    assertThat(w.findings(ROCE)).extracting(IbFinding::kind).containsExactly(IbFindingKind.QUIET);
  }

  @Test
  void risingSymbolErrorsAreLinkErrorsAndHideTheWaitTheyCause() {
    sysfs.set("mlx5_1", "counters/symbol_error", "40").set("mlx5_1", "counters/port_xmit_wait", "900000");

    IbWindow w = window();

    assertThat(w.findings(ROCE)).singleElement().satisfies(f -> {
      assertThat(f.kind()).isEqualTo(IbFindingKind.LINK_ERRORS);
      assertThat(f).extracting(IbFinding::before, IbFinding::after, IbFinding::delta, IbFinding::atLeast)
          .containsExactly(3L, 40L, 37L, false);
      assertThat(f.message()).isEqualTo("mlx5_1:1 link errors: symbol_error 3 -> 40 (+37) in 30 s; cable, optic or"
          + " connector");
    });
  }

  @Test
  void xmitWaitGrowthWithoutErrorsIsCongestion() {
    sysfs.set("mlx5_0", "counters/port_xmit_wait", "23730501").set("mlx5_0", "counters/port_xmit_discards", "12");

    IbWindow w = window();

    assertThat(w.findings(IB)).extracting(IbFinding::kind, IbFinding::counter, IbFinding::delta).containsExactly(
        org.assertj.core.groups.Tuple.tuple(IbFindingKind.CONGESTION, "port_xmit_discards", 12L),
        org.assertj.core.groups.Tuple.tuple(IbFindingKind.CONGESTION, "port_xmit_wait", 1_000_000L));
    assertThat(w.findings(IB).get(1).message()).isEqualTo("mlx5_0:1 congested: port_xmit_wait 22730501 -> 23730501"
        + " (+1000000) in 30 s without link errors; slow, not dead");
    assertThat(w.findings(IbFindingKind.LINK_ERRORS)).isEmpty();
  }

  @Test
  void belowTheThresholdWaitIsQuiet() {
    sysfs.set("mlx5_0", "counters/port_xmit_wait", "22730600");

    assertThat(window().findings(IB)).extracting(IbFinding::kind).containsExactly(IbFindingKind.QUIET);
    IbWindow strict = IbWindow.between(before, sysfs.reader().snapshot(), IbThresholds.builder().xmitWait(50).build());
    assertThat(strict.findings(IB)).extracting(IbFinding::kind).containsExactly(IbFindingKind.CONGESTION);
  }

  @Test
  void aSaturatedCounterReportsALowerBoundNotABogusDelta() {
    sysfs.set("mlx5_0", "counters/symbol_error", "65535").set("mlx5_0", "counters/link_error_recovery", "255");
    IbSnapshot saturated = sysfs.reader().snapshot();

    IbWindow w = IbWindow.between(before, saturated);

    assertThat(w.findings(IB)).extracting(IbFinding::counter, IbFinding::delta, IbFinding::atLeast)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("link_error_recovery", 255L, true),
            org.assertj.core.groups.Tuple.tuple("symbol_error", 65_535L, true));
    assertThat(w.findings(IB).get(1).message()).isEqualTo("mlx5_0:1 link errors: symbol_error 0 -> 65535 (>=65535,"
        + " saturated at 16 bits) in 30 s; cable, optic or connector");

    sysfs.clock.advance(Duration.ofSeconds(30));
    IbWindow stuck = IbWindow.between(saturated, sysfs.reader().snapshot());
    assertThat(stuck.findings(IB)).extracting(IbFinding::counter, IbFinding::delta, IbFinding::atLeast)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("link_error_recovery", 0L, true),
            org.assertj.core.groups.Tuple.tuple("symbol_error", 0L, true));
    assertThat(stuck.findings(IB).get(1).message()).contains("saturated at 16 bits before the window: movement"
        + " unknown");
  }

  @Test
  void aCounterThatWentDownWasReset() {
    assertThat(IbCounterDelta.of("port_rcv_errors", false, 500, 3)).satisfies(d -> {
      assertThat(d.change()).isEqualTo(IbCounterDelta.Change.RESET);
      assertThat(d.delta()).isEqualTo(3);
      assertThat(d.atLeast()).isTrue();
      assertThat(d.describe()).isEqualTo("port_rcv_errors 500 -> 3 (reset; >=3 since)");
    });
    assertThat(IbCounterDelta.of("local_link_integrity_errors", false, 3, 15).change())
        .isEqualTo(IbCounterDelta.Change.SATURATED);
    assertThat(IbCounterDelta.of("out_of_sequence", true, 3, 65535).change()).isEqualTo(IbCounterDelta.Change.EXACT);
  }

  @Test
  void retransmissionCountersRisingMeanALossyPath() {
    sysfs.set("mlx5_0", "hw_counters/local_ack_timeout_err", "91316")
        .set("mlx5_0", "hw_counters/out_of_sequence", "6140236");

    IbWindow w = window();

    assertThat(w.findings(IB)).extracting(IbFinding::kind).containsOnly(IbFindingKind.RETRANSMISSION).hasSize(2);
    assertThat(w.findings(IB).get(0).message()).startsWith("mlx5_0:1 retransmits: hw_counters/local_ack_timeout_err"
        + " 0 -> 91316 (+91316) in 30 s");
  }

  @Test
  void aPortWithoutHwCountersIsStillClassified() {
    sysfs.set("mlx5_1", "counters/port_xmit_data", "81235567");

    IbWindow w = window();

    assertThat(w.deltas().get(ROCE)).noneMatch(IbCounterDelta::hw);
    assertThat(w.findings(ROCE)).singleElement().satisfies(f -> {
      assertThat(f.kind()).isEqualTo(IbFindingKind.QUIET);
      assertThat(f).extracting(IbFinding::counter, IbFinding::delta).containsExactly("port_xmit_data", 1000L);
      assertThat(f.message()).endsWith("in 30 s while 4000 bytes were sent");
    });
  }

  @Test
  void aNicThatDisappearsIsReportedFirst() throws Exception {
    sysfs.remove("mlx5_1");

    IbWindow w = window();

    assertThat(w.findings()).extracting(IbFinding::kind, IbFinding::port).containsExactly(
        org.assertj.core.groups.Tuple.tuple(IbFindingKind.NIC_DISAPPEARED, ROCE),
        org.assertj.core.groups.Tuple.tuple(IbFindingKind.QUIET, IB));
    assertThat(w.findings().get(0).message()).isEqualTo("mlx5_1:1 was present (state '4: ACTIVE', phys_state"
        + " '5: LinkUp') and is gone 30 s later: the HCA failed, was reset, or fell off the PCIe bus");
    assertThat(IbWindow.between(sysfs.reader().snapshot(), before).findings(IbFindingKind.NIC_APPEARED))
        .extracting(IbFinding::port).containsExactly(ROCE);
  }

  @Test
  void aPortThatIsDownSaysSoWithBothStates() {
    sysfs.set("mlx5_0", "state", "1: DOWN").set("mlx5_0", "phys_state", "3: Disabled");

    IbWindow w = window();

    assertThat(w.findings(IB)).singleElement().satisfies(f -> {
      assertThat(f.kind()).isEqualTo(IbFindingKind.PORT_DOWN);
      assertThat(f).extracting(IbFinding::counter, IbFinding::before, IbFinding::after)
          .containsExactly("state", 4L, 1L);
      assertThat(f.message()).isEqualTo("mlx5_0:1 is not up: state '1: DOWN', phys_state '3: Disabled' (was"
          + " '4: ACTIVE', '5: LinkUp')");
    });
  }

  @Test
  void thresholdsMustBePositive() {
    assertThatThrownBy(() -> IbThresholds.builder().xmitWait(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("xmitWait threshold must be positive, got 0");
    assertThat(IbThresholds.defaults().xmitWait()).isEqualTo(IbThresholds.DEFAULT_XMIT_WAIT);
  }
}

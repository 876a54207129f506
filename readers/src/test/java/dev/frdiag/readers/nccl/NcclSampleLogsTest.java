package dev.frdiag.readers.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.readers.nccl.ChannelTransport.Kind;
import dev.frdiag.readers.nccl.NcclTopology.GpuNicPath;
import dev.frdiag.readers.nccl.NcclTopology.PathType;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The real logs under {@code nccl_logs/} (see NOTICE.md there) read as the samples' README says they should. */
class NcclSampleLogsTest {
  private final NcclLogParser parser = NcclLogParser.create();

  @Test
  void socketJobOnTwoNodesMapsFourRanksAndFlagsTheMissingRdmaNic() throws Exception {
    NcclLog log = parse("nccl1232-socket-2node-4rank-init.log");

    assertThat(log.hosts()).containsExactly("node0", "node2");
    assertThat(log.processes()).hasSize(4);
    assertThat(log.ranks()).hasSize(4);
    assertThat(log.ranks().get(0)).extracting(NcclRank::host, NcclRank::pid).containsExactly("node0", 13571);
    assertThat(log.ranks().get(1)).extracting(NcclRank::host, NcclRank::pid).containsExactly("node2", 22555);
    assertThat(log.ranks().get(2)).extracting(NcclRank::host, NcclRank::pid).containsExactly("node0", 13572);
    assertThat(log.ranks().get(3)).extracting(NcclRank::host, NcclRank::pid, NcclRank::evidence)
        .containsExactly("node2", 22556, "launcher tag [3]");
    // Between nodes every connection goes over sockets, within node0 over shared memory.
    for (ChannelTransport t : log.transports()) {
      boolean sameHost = log.ranks().get(t.fromRank()).host().equals(log.ranks().get(t.toRank()).host());
      assertThat(t.kind()).as(t.toString()).isEqualTo(sameHost ? Kind.SHM : Kind.NET);
      if (!sameHost) {
        assertThat(t.net()).isEqualTo("Socket");
      }
    }
    assertThat(log.transports()).extracting(ChannelTransport::channel).containsOnly(0, 1);
    assertThat(log.transports().get(0)).extracting(ChannelTransport::direction)
        .isEqualTo(ChannelTransport.Direction.SEND);
    assertThat(log.transportCounts()).containsEntry(Kind.SHM, 2L).containsEntry(Kind.NET, 9L);
    assertThat(log.channelSummaries()).singleElement().extracting(ChannelSummary::coll).isEqualTo(2);
    assertThat(log.networks()).containsExactly("Socket");
    assertThat(log.flags()).contains(NcclFlag.SOCKET_TRANSPORT, NcclFlag.NO_FAILURE);
    assertThat(NcclFlag.SOCKET_TRANSPORT.description()).isEqualTo("no RDMA NIC, Socket in use");
    assertThat(log.events()).isEmpty();
    assertThat(log.cause()).isEmpty();
  }

  @Test
  void localProtectionErrorPointsAtTheReportingHostAndTeardownIsNoise() throws Exception {
    NcclLog log = parse("nccltests252-2node-8rank-ib-err4.log");

    NcclEvent cause = log.cause().orElseThrow();
    assertThat(cause.kind()).isEqualTo(NcclEventKind.IB_COMPLETION_ERROR);
    assertThat(cause.domain()).isEqualTo(FaultDomain.NODE_NETWORK);
    assertThat(cause.host()).isEqualTo("kolyoz2");
    assertThat(cause.pid()).isEqualTo(25146);
    assertThat(cause.lineNumber()).isEqualTo(31);
    assertThat(cause.codeLocation()).isEqualTo("ib_plugin.c:1105");
    assertThat(cause.peerAddress()).isEqualTo("10.0.35.1");
    assertThat(cause.ibCompletion()).extracting(IbCompletion::status, IbCompletion::statusName,
        IbCompletion::vendorErr, IbCompletion::opcode, IbCompletion::request)
        .containsExactly(4, "LOC_PROT_ERR", 81L, 5327L, "Send");
    assertThat(cause.explanation()).startsWith("local protection error (status 4 LOC_PROT_ERR, vendor err 81)"
        + " on kolyoz2");

    assertThat(log.eventCount(NcclEventKind.TEARDOWN)).isEqualTo(10);
    assertThat(log.events()).filteredOn(e -> e.kind() == NcclEventKind.TEARDOWN)
        .allMatch(e -> e.domain() == FaultDomain.NOISE);
    assertThat(log.events()).filteredOn(e -> e.domain().isLead()).containsExactly(cause);
    assertThat(log.eventsByCause().get(0)).isEqualTo(cause);

    NcclCommunicator comm = log.communicators().get(0);
    assertThat(log.communicators()).hasSize(1);
    assertThat(comm.commId()).isEqualTo("0x996ee6f117cb8e1e");
    assertThat(comm.nranks()).isEqualTo(8);
    assertThat(comm.ranks().keySet()).containsExactly(0, 1, 4, 5, 6, 7);
    assertThat(comm.hosts()).containsExactly("kolyoz1", "kolyoz2");
    assertThat(comm.ranks().get(4)).extracting(NcclRank::busId, NcclRank::state)
        .containsExactly("42000", NcclRank.State.INIT_COMPLETE);
    assertThat(comm.ranks().get(6)).extracting(NcclRank::busId, NcclRank::cudaDev, NcclRank::state)
        .containsExactly("d4000", 2, NcclRank.State.INIT_STARTED);
    assertThat(comm.initComplete()).isFalse();
    assertThat(log.collNetPresent()).isTrue();
    assertThat(log.nvlsPresent()).isFalse();
    assertThat(log.version()).get().extracting(NcclVersion::version, NcclVersion::inferred)
        .containsExactly("2.21 to 2.25", true);
  }

  @Test
  void retryExceededIsAFabricLeadNamingThePeer() throws Exception {
    NcclLog log = parse("nccl1405-ib-status12-roce-recv.log");

    assertThat(log.eventCount(NcclEventKind.IB_COMPLETION_ERROR)).isEqualTo(3);
    NcclEvent cause = log.cause().orElseThrow();
    assertThat(cause.domain()).isEqualTo(FaultDomain.FABRIC);
    assertThat(cause.peerAddress()).isEqualTo("10.216.210.236");
    assertThat(cause.peer()).isEqualTo("10.216.210.236<54862>");
    assertThat(cause.device()).isEqualTo(4);
    IbCompletion c = cause.ibCompletion();
    assertThat(c.status()).isEqualTo(12);
    assertThat(c.statusName()).isEqualTo("RETRY_EXC_ERR");
    assertThat(c.vendorErr()).isEqualTo(129);
    assertThat(c.request()).isEqualTo("Recv");
    assertThat(c.roce()).isTrue();
    assertThat(c.localGid()).isEqualTo("fd00:1148:9000:5000:4:200:3:ff22");
    assertThat(c.remoteGid()).isEqualTo("fd00:1148:9000:5000:4:200:3:ff1f");
    assertThat(cause.explanation()).contains("no ACK from 10.216.210.236");
    assertThat(log.events()).filteredOn(e -> e.kind() == NcclEventKind.IB_COMPLETION_ERROR)
        .extracting(NcclEvent::peerAddress).containsOnly("10.216.210.236");
    assertThat(log.events()).filteredOn(e -> e.kind() == NcclEventKind.ERROR_PROPAGATION)
        .allMatch(e -> e.domain() == FaultDomain.SECONDARY).hasSize(8);
  }

  @Test
  void topologyDumpGivesGpuNicAffinityAndBandwidths() throws Exception {
    NcclLog log = parse("nccl1197-nvls-hang-topology.log");

    assertThat(log.cause()).isEmpty();
    assertThat(log.flags()).contains(NcclFlag.NO_FAILURE);
    assertThat(log.topologies()).hasSize(1);
    NcclTopology topo = log.topologies().get(0);
    assertThat(topo.host()).isEmpty();
    assertThat(topo.maxBw()).isEqualTo(24.0);
    assertThat(topo.totalBw()).isEqualTo(360.0);
    assertThat(topo.complete()).isFalse();
    assertThat(topo.nodes("GPU")).extracting(NcclTopology.Node::gpuRank).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
    assertThat(topo.nodes("NIC")).extracting(NcclTopology.Node::name)
        .containsExactly("NIC/6000", "NIC/C000", "NIC/86000", "NIC/8C000");
    assertThat(topo.links()).contains(new NcclTopology.Link("GPU/4000", "NVS/0", "NVL", 360.0),
        new NcclTopology.Link("NIC/6000", "NET/0", "NET", 25.0),
        new NcclTopology.Link("CPU/0", "CPU/1", "SYS", 10.0));

    Map<String, List<GpuNicPath>> closest = topo.closestNics();
    assertThat(closest).hasSize(8);
    assertThat(closest.get("GPU/4000")).containsExactly(
        new GpuNicPath("GPU/4000", 0, "NIC/6000", "NET/0", PathType.PIX, 24.0));
    assertThat(closest.get("GPU/B000")).containsExactly(
        new GpuNicPath("GPU/B000", 3, "NIC/C000", "NET/1", PathType.PIX, 24.0));
    assertThat(closest.get("GPU/85000")).extracting(GpuNicPath::net).containsExactly("NET/2");
    // The last NIC's NET line is cut off in the excerpt.
    assertThat(closest.get("GPU/8B000")).extracting(GpuNicPath::nic, GpuNicPath::net)
        .containsExactly(org.assertj.core.groups.Tuple.tuple("NIC/8C000", ""));
    assertThat(topo.paths()).contains(
        new GpuNicPath("GPU/4000", 0, "NIC/C000", "NET/1", PathType.PHB, 24.0),
        new GpuNicPath("GPU/4000", 0, "NIC/86000", "NET/2", PathType.SYS, 10.0));
    assertThat(log.version()).get().extracting(NcclVersion::version).isEqualTo("2.20 or earlier");
  }

  @Test
  void outOfMemoryOnGpu3OutranksTheClosedConnectionGpu0PrintedFirst() throws Exception {
    NcclLog log = parse("nccl1235-oom-then-socket-closed.log");

    NcclEvent first = log.events().get(0);
    assertThat(first.kind()).isEqualTo(NcclEventKind.SOCKET_CLOSED_BY_PEER);
    assertThat(first.device()).isZero();
    assertThat(first.peer()).isEqualTo("ng30903-ib.narval.calcul.quebec<51159>");

    NcclEvent cause = log.cause().orElseThrow();
    assertThat(cause.kind()).isEqualTo(NcclEventKind.CUDA_FAILURE);
    assertThat(cause.domain()).isEqualTo(FaultDomain.GPU);
    assertThat(cause.device()).isEqualTo(3);
    assertThat(cause.pid()).isEqualTo(3063028);
    assertThat(cause.lineNumber()).isEqualTo(16);
    assertThat(cause.explanation()).isEqualTo("out of GPU memory on GPU 3 of ng30903 (pid 3063028)");
    assertThat(cause.line()).isEqualTo("ng30903:3063028:3066152 [3] include/alloc.h:178 NCCL WARN Cuda failure"
        + " 'out of memory'");

    List<NcclEvent> byCause = log.eventsByCause();
    assertThat(byCause).extracting(NcclEvent::kind).startsWith(NcclEventKind.CUDA_FAILURE,
        NcclEventKind.CUDA_ALLOC_FAILED, NcclEventKind.SOCKET_CLOSED_BY_PEER);
    assertThat(byCause.indexOf(cause)).isLessThan(byCause.indexOf(first));
    assertThat(log.events()).filteredOn(e -> e.kind() == NcclEventKind.CUDA_ALLOC_FAILED).singleElement()
        .extracting(NcclEvent::explanation).asString().endsWith("while NCCL allocated 6291456 bytes");
    assertThat(log.eventCount(NcclEventKind.PROXY_FAILURE)).isEqualTo(2);
  }

  @Test
  void pytorchWatchdogLogsHaveNoNcclEventsAndSaySo() throws Exception {
    for (String name : List.of("llamafactory7396-watchdog-allreduce.log", "clmvsnet14-syncbn-enqueued-ahead.log")) {
      NcclLog log = parse(name);

      assertThat(log.pytorchLineCount()).as(name).isEqualTo(4);
      assertThat(log.ncclLineCount()).as(name).isZero();
      assertThat(log.events()).as(name).isEmpty();
      assertThat(log.flags()).as(name).contains(NcclFlag.PYTORCH_WITHOUT_NCCL_EVENTS, NcclFlag.NO_FAILURE);
      assertThat(log.summary()).as(name).contains("PyTorch ProcessGroupNCCL lines found, but no NCCL event lines");
    }
  }

  private NcclLog parse(String name) throws Exception {
    return parser.parse(sample(name));
  }

  static Path sample(String name) throws URISyntaxException {
    return Path.of(NcclSampleLogsTest.class.getResource("/nccl_logs/" + name).toURI());
  }
}

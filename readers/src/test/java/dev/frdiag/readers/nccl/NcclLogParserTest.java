package dev.frdiag.readers.nccl;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.readers.nccl.ChannelTransport.Direction;
import dev.frdiag.readers.nccl.ChannelTransport.Kind;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NcclLogParserTest {
  @TempDir
  Path dir;

  private final NcclLogParser parser = NcclLogParser.create();

  @Test
  void readsThePrefixBehindLauncherShipperAndProgressBarNoise() throws Exception {
    NcclLog log = parseFile(
        "[1,3]<stdout>:nodeA:100:101 [3] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "(RayWorker pid=123) nodeB:200:201 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO];"
            + " OOB eth0:10.1.0.5<0>",
        "2024-05-01T10:00:00.123456789Z stdout F nodeC:300:301 [1] NCCL INFO Using network IB",
        " 45%|████▌     | 9/20 [00:03<00:04,  2.81it/s]nodeD:400:401 [2] NCCL INFO Channel 00/0 : 0[0] -> 1[1]"
            + " via P2P/CUMEM/read",
        "[2] nodeE:500:501 [0] NCCL INFO Connected all trees");

    assertThat(log.processes()).extracting(NcclProcess::toString)
        .containsExactly("nodeA:100", "nodeB:200", "nodeC:300", "nodeD:400", "nodeE:500");
    assertThat(log.processes()).extracting(NcclProcess::launcherRank).containsExactly(3, -1, -1, -1, 2);
    assertThat(log.processes().get(0).bootstrap()).isEqualTo("eth0:10.0.0.1<0>");
    assertThat(log.processes().get(2).network()).isEqualTo("IB");
    assertThat(log.nics()).containsExactly(new NcclNic("nodeB", "IB", 0, "mlx5_0", 1, "IB", ""),
        new NcclNic("nodeB", "IB", 1, "mlx5_1", 1, "RoCE", ""));
    assertThat(log.transports()).singleElement().extracting(ChannelTransport::host, ChannelTransport::kind,
        ChannelTransport::via).containsExactly("nodeD", Kind.P2P, "P2P/CUMEM/read");
    assertThat(log.ncclLineCount()).isEqualTo(5);
  }

  @Test
  void readsTheWarnTimestampOf226AndDatesTheVersionByIt() throws Exception {
    NcclLog log = parseFile("[2025-02-03 04:05:06.789] gpu7:11:12 [5] transport/net_ib/common.cc:1234 NCCL WARN"
        + " NET/IB: Got completion from peer 10.0.0.9<1234> with status=12 opcode=0 len=0 vendor err 129 (Recv)"
        + " hca mlx5_3");

    NcclEvent e = log.events().get(0);
    assertThat(e.timestamp()).isEqualTo(LocalDateTime.of(2025, 2, 3, 4, 5, 6, 789_000_000));
    assertThat(e.origin()).isEqualTo("gpu7:11 [5]");
    assertThat(e.tid()).isEqualTo(12);
    assertThat(e.codeLocation()).isEqualTo("transport/net_ib/common.cc:1234");
    assertThat(e.nic()).isEqualTo("mlx5_3");
    assertThat(e.ibCompletion().hca()).isEqualTo("mlx5_3");
    assertThat(e.ibCompletion().roce()).isFalse();
    assertThat(log.version()).get().extracting(NcclVersion::version, NcclVersion::inferred)
        .containsExactly("2.26 or later", true);
    assertThat(log.version().orElseThrow().basis()).isEqualTo("a timestamp before the line prefix (line 1)");
  }

  @Test
  void aPrintedBannerWinsOverFormatClues() throws Exception {
    NcclLog bare = parseLines("NCCL version 2.21.5+cuda12.4", "h:1:1 [0] NCCL INFO Bootstrap: Using eth0:1.2.3.4<0>");
    NcclLog info = parseLines("h:1:1 [0] NCCL INFO NCCL version 2.26.2+cuda12.2");

    assertThat(bare.version()).get().isEqualTo(new NcclVersion("2.21.5+cuda12.4", false, "banner at line 1"));
    assertThat(info.version()).get().extracting(NcclVersion::version).isEqualTo("2.26.2+cuda12.2");
    assertThat(bare.flags()).doesNotContain(NcclFlag.VERSION_INFERRED);
  }

  @Test
  void takesTheVersionPyTorchNamesWhenNcclPrintedNone() throws Exception {
    NcclLog log = parseLines("[rank0]:[I1213 17:20:01.000000000 ProcessGroupNCCL.cpp:912] [PG ID 0 PG GUID 0 Rank 0]"
        + " ProcessGroupNCCL environments: NCCL version: 2.21.5, TORCH_NCCL_ASYNC_ERROR_HANDLING: 3");

    assertThat(log.version()).get().isEqualTo(new NcclVersion("2.21.5", false,
        "PyTorch's ProcessGroupNCCL message at line 1"));
    assertThat(log.pytorchLineCount()).isEqualTo(1);
  }

  @Test
  void aMissingPluginIsNoiseButAFailingOneIsNot() throws Exception {
    NcclLog log = parseLines(
        "h:1:1 [0] net.cc:1 NCCL WARN NET/Plugin: Could not find: libnccl-net.so. Using internal net plugin.",
        "h:1:1 [0] net.cc:1 NCCL WARN NET/Plugin: Failed to initialize plugin IBext_v8: ncclInternalError");

    assertThat(log.events()).extracting(NcclEvent::domain).containsExactly(FaultDomain.NOISE, FaultDomain.UNKNOWN);
  }

  @Test
  void bootstrapSpellingDatesTheVersion() throws Exception {
    assertThat(parseLines("h:1:1 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>").version()).get()
        .extracting(NcclVersion::version).isEqualTo("2.24 or later");
    assertThat(parseLines("h:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 19000 commId 0xab"
            + " - Init START").version()).get().extracting(NcclVersion::version).isEqualTo("2.21 to 2.23");
  }

  @Test
  void keepsStatePerProcessWhenProcessesInterleave() throws Exception {
    NcclLog log = parseLines(
        "a:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1a000"
            + " commId 0xc0ffee - Init START",
        "b:2:2 [0] NCCL INFO ncclCommInitRank comm 0xb0 rank 1 nranks 2 cudaDev 0 nvmlDev 4 busId 9a000"
            + " commId 0xc0ffee - Init START",
        "b:2:2 [0] NCCL INFO Ring 00 : 0 -> 1 -> 0",
        "a:1:1 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1",
        "a:1:1 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1",
        "b:2:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[4] [receive] via NET/IB/0/GDRDMA",
        "a:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[4] [send] via NET/IB/0(1)/GDRDMA",
        "a:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1a000"
            + " commId 0xc0ffee - Init COMPLETE",
        "b:2:2 [0] NCCL INFO comm 0xb0 rank 1 nranks 2 cudaDev 0 busId 9a000 - Destroy COMPLETE");

    NcclCommunicator comm = log.communicators().get(0);
    assertThat(comm.ranks().get(0)).extracting(NcclRank::host, NcclRank::state)
        .containsExactly("a", NcclRank.State.INIT_COMPLETE);
    assertThat(comm.ranks().get(1)).extracting(NcclRank::host, NcclRank::nvmlDev, NcclRank::state)
        .containsExactly("b", 4, NcclRank.State.DESTROYED);
    assertThat(comm.initComplete()).isTrue();
    assertThat(log.rings()).containsExactly(new RingNeighbours("b", 2, "0xc0ffee", 0, 0, 1, 0),
        new RingNeighbours("a", 1, "0xc0ffee", 0, 1, 0, 1));
    assertThat(log.trees()).containsExactly(new TreeLinks("a", 1, "0xc0ffee", 0, 0, List.of(1), -1),
        new TreeLinks("a", 1, "0xc0ffee", 1, 0, List.of(), 1));
    assertThat(log.trees().get(0).root()).isTrue();
    ChannelTransport recv = log.transports().get(0);
    assertThat(recv.direction()).isEqualTo(Direction.RECEIVE);
    assertThat(recv.printingRank()).isEqualTo(1);
    ChannelTransport send = log.transports().get(1);
    assertThat(send).extracting(ChannelTransport::net, ChannelTransport::nic, ChannelTransport::proxyRank,
        ChannelTransport::gdr, ChannelTransport::commId).containsExactly("IB", 0, 1, true, "0xc0ffee");
    assertThat(log.events()).singleElement().extracting(NcclEvent::kind, NcclEvent::domain)
        .containsExactly(NcclEventKind.COMM_DESTROYED, FaultDomain.NOISE);
  }

  @Test
  void readsEveryTransportSpelling() throws Exception {
    NcclLog log = parseLines(
        "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
        "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 0[0] via P2P/direct pointer",
        "h:1:1 [0] NCCL INFO Channel 02 : 0[0] -> 1[1] via SHM/direct/direct",
        "h:1:1 [0] NCCL INFO Channel 03/0 : 0[0] -> 2[0] [send] via NET/IBext_v8/3/GDRDMA",
        "h:1:1 [0] NCCL INFO Channel 04/0 : 0[0] -> 2[0] [send] via NET/AWS Libfabric/0/GDRDMA",
        "h:1:1 [0] NCCL INFO Channel 05/0 : 0[1a000] -> 1[1b000] via P2P/CUMEM/read/CE",
        "h:1:1 [0] NCCL INFO Channel 00/04 :    0   1   2   3",
        "h:1:1 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/IB/0/GDRDMA");

    assertThat(log.transports()).extracting(ChannelTransport::kind)
        .containsExactly(Kind.P2P, Kind.P2P, Kind.SHM, Kind.NET, Kind.NET, Kind.P2P);
    assertThat(log.transports()).extracting(ChannelTransport::via).containsExactly("P2P/IPC/read",
        "P2P/direct pointer", "SHM/direct/direct", "NET/IBext_v8/3/GDRDMA", "NET/AWS Libfabric/0/GDRDMA",
        "P2P/CUMEM/read/CE");
    assertThat(log.transports().get(3)).extracting(ChannelTransport::net, ChannelTransport::nic)
        .containsExactly("IBext_v8", 3);
    assertThat(log.transports().get(4).net()).isEqualTo("AWS Libfabric");
    assertThat(log.transports().get(5).fromDev()).isEqualTo("1a000");
    assertThat(log.collNetPresent()).isTrue();
  }

  @Test
  void readsGdrDecisionsAndFlagsADisabledPair() throws Exception {
    NcclLog log = parseLines(
        "h:1:1 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 0 / HCA 0 (distance 4 <= 4), read 1 mode Default",
        "h:1:1 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 1 / HCA 3 (distance 6 > 4)");

    assertThat(log.gdrDecisions()).containsExactly(new GdrDecision("h", 1, "0", "0", true, 4, 4),
        new GdrDecision("h", 1, "1", "3", false, 6, 4));
    assertThat(log.flags()).contains(NcclFlag.GDR_DISABLED);
  }

  @Test
  void opCountLinesFindTheRankThatStoppedIssuing() throws Exception {
    List<String> lines = new ArrayList<>();
    for (int r = 0; r < 3; r++) {
      lines.add("n" + r + ":1" + r + ":1 [0] NCCL INFO ncclCommInitRank comm 0x" + r + "f rank " + r
          + " nranks 3 cudaDev 0 nvmlDev 0 busId 1000 commId 0x77 - Init COMPLETE");
    }
    for (int op = 0; op < 7; op++) {
      for (int r = 0; r < 3; r++) {
        if (r == 2 && op > 4) {
          continue;
        }
        lines.add("n" + r + ":1" + r + ":1 [0] NCCL INFO AllReduce: opCount " + Integer.toHexString(op)
            + " sendbuff 0x7f00 recvbuff 0x7f00 count 1048576 datatype 7 op 0 root 0 comm 0x" + r + "f [nranks=3]"
            + " stream 0x55");
      }
    }
    NcclLog log = parseLines(lines.toArray(String[]::new));

    assertThat(log.opCounts()).hasSize(3);
    assertThat(log.opCounts()).extracting(OpCountProgress::lastOpCount).containsExactly(6L, 6L, 4L);
    assertThat(log.laggards()).singleElement().extracting(OpCountProgress::rank, OpCountProgress::host,
        OpCountProgress::lastOpCount, OpCountProgress::calls, OpCountProgress::nranks,
        OpCountProgress::lastCollective).containsExactly(2, "n2", 4L, 5L, 3, "AllReduce");
    assertThat(log.summary()).contains("behind: rank 2 on n2:12 last opCount 4");
  }

  @Test
  void classifiesIbAsyncEventsOfEveryVersion() throws Exception {
    NcclLog log = parseLines(
        "h:1:1 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error",
        "h:1:1 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_0:1 Got async event : port active",
        "h:1:1 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_2:1 async fatal event: local catastrophic error",
        "h:1:1 [0] transport/net_ib.cc:100 NCCL WARN NET/IB : mlx5_2:1 async fatal event on QP (0x55a0): local work"
            + " queue catastrophic error",
        "h:1:1 [0] net_ib.cc:100 NCCL WARN NET/IB : Got async event : GID table change");

    assertThat(log.events()).extracting(NcclEvent::nic).containsExactly("mlx5_0:1", "mlx5_0:1", "mlx5_2:1",
        "mlx5_2:1", "");
    assertThat(log.events()).extracting(NcclEvent::domain).containsExactly(FaultDomain.FABRIC, FaultDomain.NOISE,
        FaultDomain.NODE_NETWORK, FaultDomain.NODE_NETWORK, FaultDomain.NOISE);
    assertThat(log.events().get(0).explanation())
        .isEqualTo("port error on mlx5_0:1 of h: the link went down (cable, optic or switch port)");
    assertThat(log.events().get(1).explanation()).contains("link flap");
    // 2.23+ (async fatal) and ≤2.19 (no device) spellings in one log cannot both be right.
    assertThat(log.version()).get().extracting(NcclVersion::version).isEqualTo("unknown");
  }

  @Test
  void retryExceededOutranksTheFlushErrorsPrintedBeforeIt() throws Exception {
    NcclLog log = parseLines(
        "h:1:1 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 5,"
            + " opcode 0, len 0, vendor err 249 (Flush)",
        "h:1:1 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion from peer 10.0.0.3<1> with error 12,"
            + " opcode 0, len 0, vendor err 129 (Send)");

    assertThat(log.events().get(0).domain()).isEqualTo(FaultDomain.SECONDARY);
    assertThat(log.events().get(0).ibCompletion().request()).isEqualTo("Flush");
    assertThat(log.cause()).get().extracting(NcclEvent::peerAddress).isEqualTo("10.0.0.3");
    assertThat(log.eventsByCause()).extracting(NcclEvent::lineNumber).containsExactly(2L, 1L);
    assertThat(log.version()).get().extracting(NcclVersion::version).isEqualTo("2.19 or earlier");
  }

  @Test
  void classifiesConfigurationSocketAndCudaWarnings() throws Exception {
    NcclLog log = parseLines(
        "h:1:1 [0] init.cc:1 NCCL WARN Mismatched NCCL version detected : rank 0 version 22105 rank 1 version 22304",
        "h:1:1 [0] init.cc:1 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1a000",
        "h:1:1 [0] misc/ibvwrap.cc:1 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev"
            + " mlx5_1:1, curr state INIT, next state RTR, local GID index 3",
        "h:1:1 [0] misc/socket.cc:1 NCCL WARN socketProgressOpt: Call to recv from 10.1.1.1<4242> failed :"
            + " Connection reset by peer",
        "h:1:1 [0] transport/net_socket.cc:1 NCCL WARN NET/Socket : peer 10.1.1.1<4242> message truncated :"
            + " receiving 1024 bytes instead of 512",
        "h:1:1 [2] enqueue.cc:1 NCCL WARN Cuda failure 700 'an illegal memory access was encountered'",
        "h:1:1 [0] transport/nvls.cc:1 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1 :"
            + " CUDA error 401 'the operation cannot be performed in the present state'.",
        "h:1:1 [0] init.cc:1 NCCL WARN something nobody has seen before",
        "h:1:1 [0] NCCL INFO net.cc:1 -> 2 [Async thread]");

    assertThat(log.events()).extracting(NcclEvent::kind).containsExactly(NcclEventKind.VERSION_MISMATCH,
        NcclEventKind.DUPLICATE_GPU, NcclEventKind.IB_QP_SETUP_FAILED, NcclEventKind.SOCKET_IO_FAILED,
        NcclEventKind.SOCKET_MESSAGE_TRUNCATED, NcclEventKind.CUDA_FAILURE, NcclEventKind.NVLS_BIND_FAILED,
        NcclEventKind.OTHER_WARN, NcclEventKind.ERROR_PROPAGATION);
    assertThat(log.events()).extracting(NcclEvent::domain).containsExactly(FaultDomain.MISMATCH,
        FaultDomain.CONFIG, FaultDomain.FABRIC, FaultDomain.DEAD_PEER, FaultDomain.MISMATCH, FaultDomain.GPU,
        FaultDomain.GPU, FaultDomain.UNKNOWN, FaultDomain.SECONDARY);
    assertThat(log.events().get(2).nic()).isEqualTo("mlx5_1:1");
    assertThat(log.events().get(3).explanation())
        .isEqualTo("a socket to 10.1.1.1<4242> failed (Connection reset by peer): usually that peer died");
    assertThat(log.events().get(4).peer()).isEqualTo("10.1.1.1<4242>");
    assertThat(log.events().get(5).explanation())
        .isEqualTo("CUDA error 700 'an illegal memory access was encountered' on GPU 2 of h (pid 1)");
    assertThat(log.events().get(8).explanation())
        .isEqualTo("NCCL error 2 (ncclSystemError) passed up at net.cc:1");
    assertThat(log.cause()).get().extracting(NcclEvent::kind).isEqualTo(NcclEventKind.VERSION_MISMATCH);
  }

  @Test
  void keepsTheFirstEventsOfAKindAndCountsTheRest() throws Exception {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      lines.add("h:1:1 [0] NCCL INFO proxy.cc:" + (100 + i) + " -> 6");
    }
    NcclLog log = NcclLogParser.builder().maxEventsPerKind(3).build().parseLines(lines, "capped");

    assertThat(log.events()).extracting(NcclEvent::lineNumber).containsExactly(1L, 2L, 3L);
    assertThat(log.eventCount(NcclEventKind.ERROR_PROPAGATION)).isEqualTo(10);
    assertThat(log.flags()).contains(NcclFlag.ENTRIES_CAPPED);
  }

  @Test
  void rejectsABinaryFileNamingTheByte() throws Exception {
    Path file = dir.resolve("core.gz");
    Files.write(file, new byte[] {'a', 'b', 'c', '\n', 0x1f, (byte) 0x8b, 0x08, 0x00, 'x'});

    assertThatThrownBy(() -> parser.parse(file)).isInstanceOf(NotAnNcclLogException.class)
        .hasMessage(file + ": not an NCCL log: binary data at byte 4");
  }

  @Test
  void rejectsTextWithoutNcclLines() throws Exception {
    Path file = write("metrics.csv", "step,loss", "1,0.5", "2,0.4\n");

    assertThatThrownBy(() -> parser.parse(file)).isInstanceOf(NotAnNcclLogException.class)
        .hasMessage(file + ": not an NCCL log: no NCCL line in the first 3 lines");
    assertThatThrownBy(() -> NcclLogParser.builder().sniffLines(2).build().parse(file))
        .hasMessage(file + ": not an NCCL log: no NCCL line in the first 2 lines");
    Path empty = write("empty.log", "");
    assertThatThrownBy(() -> parser.parse(empty)).hasMessage(empty + ": not an NCCL log: empty file");
  }

  @Test
  void readsATruncatedLastLineAndFlagsIt() throws Exception {
    Path file = dir.resolve("cut.log");
    Files.writeString(file, "h:1:1 [0] NCCL INFO Using network IB\n"
        + "h:1:1 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of mem");

    NcclLog log = parser.parse(file);

    assertThat(log.truncatedLastLine()).isTrue();
    assertThat(log.flags()).contains(NcclFlag.TRUNCATED_LAST_LINE);
    assertThat(log.lineCount()).isEqualTo(2);
    assertThat(log.cause()).get().extracting(NcclEvent::kind, NcclEvent::device)
        .containsExactly(NcclEventKind.CUDA_FAILURE, 3);
  }

  @Test
  void countsMalformedLinesInsteadOfFailing() throws Exception {
    NcclLog log = parseFile(
        "h:1:1 [0] NCCL INFO Ring 99999999999 : 1 -> 2 -> 3",
        "h:99999999999:1 [0] NCCL INFO Using network IB",
        "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 5 nranks 2 cudaDev 0 nvmlDev 0 busId 1 commId 0x2 -"
            + " Init START",
        "h:1:1 [0] NCCL INFO AllReduce: opCount zz sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op 0 root 0"
            + " comm 0x1 [nranks=2] stream 0x1",
        "h:1:1 [x] NCCL INFO Using network IB",
        "NCCL INFO",
        "h:1:1 [0] NCCL WARN");

    assertThat(log.malformedLineCount()).isEqualTo(1);
    assertThat(log.rings()).isEmpty();
    assertThat(log.communicators()).isEmpty();
    assertThat(log.opCounts()).isEmpty();
    assertThat(log.processes()).extracting(NcclProcess::toString).containsExactly("h:1");
    assertThat(log.events()).singleElement().extracting(NcclEvent::kind).isEqualTo(NcclEventKind.OTHER_WARN);
  }

  @Test
  void readsTheStartOfAnOverlongLineAndGoesOn() throws Exception {
    String longLine = "h:1:1 [0] NCCL INFO Using network IB " + "x".repeat(3 * NcclLogParser.MAX_LINE_BYTES);
    Path file = write("long.log", longLine, "h:1:1 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1\r", "");

    NcclLog log = parser.parse(file);

    assertThat(log.lineCount()).isEqualTo(2);
    assertThat(log.rings()).hasSize(1);
    assertThat(log.truncatedLastLine()).isFalse();
  }

  @Test
  void quotesTheLineAsUtf8() throws Exception {
    NcclLog log = parseFile("██ 100% h:1:1 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by"
        + " remote peer peer-host<51159>");

    assertThat(log.events().get(0).line()).startsWith("██ 100% h:1:1");
    assertThat(log.events().get(0).peerAddress()).isEqualTo("peer-host");
  }

  @Test
  void readsAPrefixedTopologyDumpWhileOtherThreadsPrint() throws Exception {
    NcclLog log = parseLines(
        "h:1:1 [0] NCCL INFO === System : maxBw 48.0 totalBw 48.0 ===",
        "h:1:1 [0] NCCL INFO CPU/0-0 (1/2/3)",
        "h:1:1 [0] NCCL INFO + PCI[48.0] - PCI/0-1000 (1000c01010000000)",
        "h:1:7 [0] NCCL INFO NET/Plugin: Loaded net plugin",
        "h:1:1 [0] NCCL INFO         + PCI[48.0] - GPU/0-1a000 (0)",
        "h:1:1 [0] NCCL INFO         + PCI[48.0] - PCI/0-2000 (1000c01010000000)",
        "h:1:1 [0] NCCL INFO                + PCI[48.0] - NIC/0-3000",
        "h:1:1 [0] NCCL INFO                       + NET[50.0] - NET/0-0 (5a1b0003c2a80/1/50.000000)",
        "h:1:1 [0] NCCL INFO ==========================================",
        "h:1:1 [0] NCCL INFO GPU/0-1a000 :GPU/0-1a000 (0/5000.0/LOC) NET/0-0 (4/48.0/PXB)");

    NcclTopology topo = log.topologies().get(0);
    assertThat(topo.complete()).isTrue();
    assertThat(topo.host()).isEqualTo("h");
    assertThat(topo.nodes()).hasSize(6);
    assertThat(topo.closestNics().get("GPU/0-1a000")).containsExactly(new NcclTopology.GpuNicPath("GPU/0-1a000",
        0, "NIC/0-3000", "NET/0-0", NcclTopology.PathType.PXB, 48.0));
    assertThat(log.version()).get().extracting(NcclVersion::version).isEqualTo("2.21 or later");
  }

  private NcclLog parseLines(String... lines) throws NotAnNcclLogException {
    return parser.parseLines(List.of(lines), "test");
  }

  private NcclLog parseFile(String... lines) throws IOException {
    String[] withEnd = new String[lines.length + 1];
    System.arraycopy(lines, 0, withEnd, 0, lines.length);
    withEnd[lines.length] = "";
    return parser.parse(write("test.log", withEnd));
  }

  private Path write(String name, String... lines) throws IOException {
    Path file = dir.resolve(name);
    Files.writeString(file, String.join("\n", lines), StandardCharsets.UTF_8);
    return file;
  }

  @Test
  void aLogOfCompletedSetupAndNoTroubleShowsAHealthySetup() throws Exception {
    String init = "node0:11:11 [0] NCCL INFO comm 0x55ab26dea5d0 rank 0 nranks 2 cudaDev 0 busId 1000 commId "
        + "0x7d0ad8c4b5ba0c4e - Init COMPLETE\n";
    assertThat(parseText(init).showsHealthySetup()).isTrue();
    // A line that is not NCCL's may still say something failed; so may a WARN; no setup line proves nothing.
    assertThat(parseText(init + "[rank0]:[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed "
        + "out.\n").showsHealthySetup()).isFalse();
    assertThat(parseText(init + "node0:11:12 [0] NCCL WARN Call to ibv_reg_mr failed\n").showsHealthySetup())
        .isFalse();
    assertThat(parseText("node0:11:11 [0] NCCL INFO Using network IB\n").showsHealthySetup()).isFalse();
  }

  @Test
  void cleanCommunicatorTeardownCountsAsHealthyButAnAbortDoesNot() throws Exception {
    String destroy = "w1:70:224 [7] NCCL INFO comm 0x5556543bb320 rank 15 nranks 16 cudaDev 7 busId e00000 - "
        + "Destroy COMPLETE\n";
    NcclLog log = parseText(destroy);
    assertThat(log.events()).singleElement().extracting(NcclEvent::kind, NcclEvent::domain)
        .containsExactly(NcclEventKind.COMM_DESTROYED, FaultDomain.NOISE);
    assertThat(log.showsHealthySetup()).isTrue();
    assertThat(log.showsCleanTeardown()).isTrue();
    // ncclCommAbort is the error path (PyTorch aborts its communicators after a timeout or an NCCL error).
    NcclLog aborted = parseText(destroy + "w1:71:225 [6] NCCL INFO comm 0x55c149dda4a0 rank 14 nranks 16 cudaDev 6 "
        + "busId d00000 - Abort COMPLETE\n");
    assertThat(aborted.showsHealthySetup()).isFalse();
    assertThat(aborted.showsCleanTeardown()).isFalse();
  }

  @Test
  void setUpLinesAloneAreNoTeardown() throws Exception {
    NcclLog log = parseText("node0:11:11 [0] NCCL INFO comm 0x55ab26dea5d0 rank 0 nranks 2 cudaDev 0 busId 1000 "
        + "commId 0x7d0ad8c4b5ba0c4e - Init COMPLETE\n");
    assertThat(log.showsHealthySetup()).isTrue();
    assertThat(log.showsCleanTeardown()).isFalse();
  }

  @Test
  void readsTheNcclWarnPyTorchQuotesAfterLastErrorOnTheSameLine() throws Exception {
    NcclLog log = parseFile("node0:11:12 [0] NCCL INFO Using network IB",
        "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down. terminate"
            + " called after throwing an instance of 'std::runtime_error' what(): NCCL error: remote process exited"
            + " or there was a network error, NCCL version 2.14.3 ncclRemoteError: A call failed possibly due to a"
            + " network error or a remote process exiting prematurely. Last error: NET/IB : Got completion from"
            + " peer 11.214.147.122<39138> with error 12, opcode 0, len 0, vendor err 129");

    NcclEvent e = log.events().get(0);
    assertThat(log.events()).hasSize(1);
    assertThat(e.kind()).isEqualTo(NcclEventKind.IB_COMPLETION_ERROR);
    assertThat(e.domain()).isEqualTo(FaultDomain.FABRIC);
    assertThat(e.peerAddress()).isEqualTo("11.214.147.122");
    assertThat(e.ibCompletion().status()).isEqualTo(12);
    // The quoted text is PyTorch's, not a prefixed NCCL line: nothing of the line before it is carried over.
    assertThat(e.host()).isEmpty();
    assertThat(e.pid()).isEqualTo(-1);
    assertThat(e.device()).isEqualTo(-1);
    assertThat(e.codeLocation()).isEmpty();
    assertThat(e.lineNumber()).isEqualTo(2);
    assertThat(e.line()).startsWith("Last error: NET/IB : Got completion from peer 11.214.147.122<39138>");
    assertThat(e.explanation()).contains("no ACK from 11.214.147.122").doesNotContain("null");
  }

  @Test
  void readsTheNcclWarnPyTorchQuotesOnTheLineAfterLastError() throws Exception {
    NcclLog log = parseFile("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            + "NCCLUtils.hpp:268, remote process exited or there was a network error, NCCL version 2.21.5",
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
        "Last error:",
        "",
        "socketProgressOpt: Call to recv from 172.16.0.9<33759> failed : Connection reset by peer");

    assertThat(log.events()).singleElement().extracting(NcclEvent::kind, NcclEvent::domain, NcclEvent::peer,
        NcclEvent::lineNumber).containsExactly(NcclEventKind.SOCKET_IO_FAILED, FaultDomain.DEAD_PEER,
        "172.16.0.9<33759>", 5L);
    assertThat(log.events().get(0).explanation()).contains("Connection reset by peer");
    assertThat(log.showsHealthySetup()).isFalse();
  }

  @Test
  void aLastErrorThatIsNotAWarnIsReadAsAnUnclassifiedOneAndAPrefixedLineEndsTheWait() throws Exception {
    NcclLog log = parseFile("NCCL version 2.21.5+cuda12.4", "Last error:",
        "node0:11:12 [0] NCCL INFO Using network IB", "Traceback (most recent call last):");
    assertThat(log.events()).isEmpty();
    assertThat(parseFile("NCCL version 2.21.5+cuda12.4", "Last error: something NCCL never printed").events())
        .singleElement().extracting(NcclEvent::domain).isEqualTo(FaultDomain.UNKNOWN);
  }

  @Test
  void readsLibfabricEfaCompletionErrorsAsAFailedPathToANamedPeerHost() throws Exception {
    String efa = "libfabric:451707:1708520807::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message: Invalid"
        + " address My EFA addr: fi_addr_efa://[fe80::13:c2ff:fe6f:f03d]:0:1072483550 My host id: i-0db7083f3fcbebb65"
        + " Peer EFA addr: fi_addr_efa://[fe80::b8:aff:fe44:425]:0:947699476 Peer host id: i-0ce6d3d57139f053c (7)";
    NcclLog log = parseFile(efa, "    " + efa,
        "libfabric:451707:1708520807::efa:core:efa_prov_info_set_fabric_name():123<warn> not an error at all");

    assertThat(log.events()).hasSize(2);
    NcclEvent e = log.events().get(0);
    assertThat(e.kind()).isEqualTo(NcclEventKind.NET_PLUGIN_COMPLETION_ERROR);
    assertThat(e.domain()).isEqualTo(FaultDomain.PEER_PATH);
    assertThat(e.host()).isEqualTo("i-0db7083f3fcbebb65");
    assertThat(e.pid()).isEqualTo(451707);
    assertThat(e.peer()).isEqualTo("i-0ce6d3d57139f053c");
    assertThat(e.explanation()).isEqualTo("EFA completion error towards peer host i-0ce6d3d57139f053c (err 5: "
        + "Invalid address, provider error 7)");
    assertThat(log.events().get(1).lineNumber()).isEqualTo(2);
    assertThat(log.cause()).contains(e);
  }

  @Test
  void readsTheAwsOfiPluginsCompletionErrorsAsAFailedPath() throws Exception {
    NcclLog log = parseFile("ip-10-0-1-5:2233:2301 [3] nccl_net_ofi_rdma.cpp:1290 NCCL WARN NET/OFI Request "
        + "0x7f3c2c0a1b20 completed with error. RC: 5. Error: 4106 (Invalid address). Completed length: 0, "
        + "Request: { dev: 3, size: 0, state: CREATED, type: SEND }");

    NcclEvent e = log.events().get(0);
    assertThat(e.kind()).isEqualTo(NcclEventKind.NET_PLUGIN_COMPLETION_ERROR);
    assertThat(e.domain()).isEqualTo(FaultDomain.PEER_PATH);
    assertThat(e.host()).isEqualTo("ip-10-0-1-5");
    assertThat(e.peer()).isEmpty();
    assertThat(e.explanation()).isEqualTo("AWS OFI completion error on ip-10-0-1-5 (RC 5: 4106 (Invalid address))");
  }

  private NcclLog parseText(String text) throws Exception {
    Path f = Files.createTempFile("nccl", ".log");
    try {
      Files.writeString(f, text);
      return parser.parse(f);
    } finally {
      Files.delete(f);
    }
  }

  /**
   * Members of one communicator at one opCount with different collectives are a mismatch, behind {@code grep -r}'s
   * file prefix too. The lines are ROCm/rccl#429's as posted (ranks 0 and 2 of a 4-rank communicator, the maintainer
   * reading rank 2's AllGather against the others' AllReduce), with ranks 1 and 3 printing what rank 0 printed, as
   * that thread says they did.
   */
  @Test
  void collLinesThatDisagreeAtOneOpCountAreAMismatchOfTheirCommunicator() throws Exception {
    String r0 = "h03r3n06:45006:45006 [0] NCCL INFO AllReduce: opCount 28c sendbuff 0x7f5dd32b2100 recvbuff "
        + "0x7f5dd32b2100 count 9984512 datatype 7 op 0 root 0 comm 0x55bef0201370 [nranks=4] stream 0x55bef0208bd0";
    String r2 = "h03r3n06:45012:45012 [2] NCCL INFO AllGather: opCount 28c sendbuff 0x7f1fd894af00 recvbuff "
        + "0x7f1ed1c00100 count 59205120 datatype 0 op 0 root 0 comm 0x559c24b55610 [nranks=4] stream 0x559c248a3630";
    NcclLog log = parseFile("logs/rank0.log:" + r0,
        "logs/rank1.log:" + r0.replace("45006:45006 [0]", "45009:45009 [1]"),
        "logs/rank2.log:" + r2,
        "logs/rank3.log:" + r0.replace("45006:45006 [0]", "45015:45015 [3]"));
    assertThat(log.collMismatches()).singleElement().satisfies(m -> {
      assertThat(m.opCount()).isEqualTo(0x28c);
      assertThat(m.majority()).isEqualTo("AllReduce count 9984512 datatype 7");
      assertThat(m.divergent()).singleElement().satisfies(d -> {
        assertThat(d.progress().pid()).isEqualTo(45012);
        assertThat(d.call().signature()).isEqualTo("AllGather count 59205120 datatype 0");
      });
    });
    // Ranks that agree, or a log that does not hold the whole communicator, are no mismatch.
    assertThat(parseFile(r0, r0.replace("45006:45006 [0]", "45009:45009 [1]")).collMismatches()).isEmpty();
    assertThat(parseFile(r0, r2).collMismatches()).isEmpty();
  }
}

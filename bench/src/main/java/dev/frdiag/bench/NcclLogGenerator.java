package dev.frdiag.bench;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

/**
 * Writes a large NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,COLL log of a 16-rank job on two 8-GPU hosts: init
 * (banner, bootstrap, NICs, Init lines, a topology dump per host, rings, trees, connections), then COLL lines of
 * every rank interleaved with training output and mpirun tags, then a failure: rank 11 stops issuing, a status-12
 * completion error with its NCCLCHECK chain, and teardown. Deterministic for a given seed.
 */
final class NcclLogGenerator {
  static final int RANKS = 16;
  static final int LAGGARD = 11;
  static final String PEER_OF_FAILURE = "10.20.1.18";

  private static final String[] HOSTS = {"dgx-a100-017", "dgx-a100-018"};
  private static final String[] COLLS = {"AllReduce", "AllReduce", "AllReduce", "AllGather", "ReduceScatter",
      "Broadcast"};

  private final OutputStream out;
  private final Random random;
  private final StringBuilder line = new StringBuilder(256);
  private long written;

  private NcclLogGenerator(OutputStream out, long seed) {
    this.out = out;
    this.random = new Random(seed);
  }

  /** Writes about {@code targetBytes} bytes to {@code file} and returns the exact size. */
  static long write(Path file, long targetBytes, long seed) throws IOException {
    try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(file), 1 << 20)) {
      NcclLogGenerator g = new NcclLogGenerator(os, seed);
      g.init();
      g.collectives(Math.max(0, targetBytes - 8192));
      g.failure();
      return g.written;
    }
  }

  private static String host(int rank) {
    return HOSTS[rank / 8];
  }

  private static int pid(int rank) {
    return 41_000 + rank * 17;
  }

  private static String comm(int rank) {
    return "0x55d4" + Integer.toHexString(0x3a0000 + rank * 0x1230);
  }

  /** Hosts' second half prints through mpirun --tag-output, as a launcher would. */
  private void prefix(int rank, int tid, String file) {
    line.setLength(0);
    if (rank >= 8) {
      line.append("[1,").append(rank).append("]<stdout>:");
    }
    line.append(host(rank)).append(':').append(pid(rank)).append(':').append(tid).append(" [").append(rank % 8)
        .append("] ");
    if (file != null) {
      line.append(file).append(" NCCL WARN ");
    } else {
      line.append("NCCL INFO ");
    }
  }

  private void info(int rank, String msg) throws IOException {
    prefix(rank, pid(rank), null);
    line.append(msg);
    emit();
  }

  private void emit() throws IOException {
    line.append('\n');
    int n = line.length();
    for (int i = 0; i < n; i++) {
      out.write(line.charAt(i));
    }
    written += n;
  }

  private void init() throws IOException {
    for (int r = 0; r < RANKS; r++) {
      info(r, "Bootstrap : Using ib0:10.20.1." + (17 + r / 8) + "<0>");
      info(r, "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation");
      info(r, "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB ib0:10.20.1."
          + (17 + r / 8) + "<0>");
      info(r, "Using network IB");
      info(r, "NCCL version 2.21.5+cuda12.4");
      info(r, "ncclCommInitRank comm " + comm(r) + " rank " + r + " nranks " + RANKS + " cudaDev " + (r % 8)
          + " nvmlDev " + (r % 8) + " busId " + Integer.toHexString(0x7000 + (r % 8) * 0x10000)
          + " commId 0x3fa9c21e8b7d6a01 - Init START");
    }
    for (int h = 0; h < 2; h++) {
      int r = h * 8;
      info(r, "=== System : maxBw 24.0 totalBw 240.0 ===");
      for (int cpu = 0; cpu < 2; cpu++) {
        info(r, "CPU/0-" + cpu + " (1/1/2)");
        for (int sw = 0; sw < 2; sw++) {
          int base = cpu * 0x80000 + sw * 0x40000;
          info(r, "+ PCI[24.0] - PCI/0-" + Integer.toHexString(base + 0x2000) + " (1000c0101000a000)");
          for (int g = 0; g < 2; g++) {
            int gpu = cpu * 4 + sw * 2 + g;
            info(r, "        + PCI[24.0] - GPU/0-" + Integer.toHexString(0x7000 + gpu * 0x10000) + " (" + (r + gpu)
                + ")");
            info(r, "               + NVL[240.0] - NVS/0-0");
          }
          info(r, "        + PCI[24.0] - NIC/0-" + Integer.toHexString(base + 0xc000));
          info(r, "               + NET[25.0] - NET/0-" + (cpu * 2 + sw) + " (4a5b0003c2a80/1/25.000000)");
        }
        info(r, "+ SYS[10.0] - CPU/0-" + (1 - cpu));
      }
      info(r, "==========================================");
    }
    for (int r = 0; r < RANKS; r++) {
      for (int c = 0; c < 8; c++) {
        info(r, String.format("Ring %02d : %d -> %d -> %d", c, (r + RANKS - 1) % RANKS, r, (r + 1) % RANKS));
      }
      info(r, "Trees [0] " + (r + 1) % RANKS + "/-1/-1->" + r + "->" + (r == 0 ? -1 : (r - 1) / 2)
          + " [1] -1/-1/-1->" + r + "->" + (r + 1) % RANKS);
      for (int c = 0; c < 8; c++) {
        int next = (r + 1) % RANKS;
        if (next / 8 == r / 8) {
          info(r, String.format("Channel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM/read", c, r, r % 8, next,
              next % 8));
        } else {
          info(r, String.format("Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA", c, r, r % 8,
              next, next % 8, c % 4));
        }
      }
      info(r, "GPU Direct RDMA Enabled for GPU " + (r % 8) + " / HCA " + (r % 8) / 2 + " (distance 4 <= 4), read 1"
          + " mode Default");
      info(r, "Connected all rings");
      info(r, "Connected all trees");
      info(r, "threadThresholds 8/8/64 | 128/8/64 | 512 | 512");
      info(r, "8 coll channels, 0 collnet channels, 0 nvls channels, 8 p2p channels, 2 p2p channels per peer");
      info(r, "ncclCommInitRank comm " + comm(r) + " rank " + r + " nranks " + RANKS + " cudaDev " + (r % 8)
          + " nvmlDev " + (r % 8) + " busId " + Integer.toHexString(0x7000 + (r % 8) * 0x10000)
          + " commId 0x3fa9c21e8b7d6a01 - Init COMPLETE");
    }
  }

  private void collectives(long until) throws IOException {
    long op = 0;
    long step = 0;
    long laggardStops = -1;
    while (written < until) {
      if (laggardStops < 0 && written > until * 9 / 10) {
        laggardStops = op;
      }
      String coll = COLLS[(int) (op % COLLS.length)];
      long count = 1L << (10 + random.nextInt(16));
      for (int r = 0; r < RANKS; r++) {
        if (r == LAGGARD && laggardStops >= 0) {
          continue;
        }
        prefix(r, pid(r), null);
        line.append(coll).append(": opCount ").append(Long.toHexString(op)).append(" sendbuff 0x7f3a")
            .append(Integer.toHexString(0x10000000 + r * 0x1000)).append(" recvbuff 0x7f3a")
            .append(Integer.toHexString(0x20000000 + r * 0x1000)).append(" count ").append(count)
            .append(" datatype 7 op 0 root 0 comm ").append(comm(r)).append(" [nranks=").append(RANKS)
            .append("] stream 0x55d4").append(Integer.toHexString(0x900000 + r));
        emit();
      }
      op++;
      if (op % 64 == 0) {
        step++;
        line.setLength(0);
        line.append("[rank").append(random.nextInt(RANKS)).append("]: step ").append(step).append(" loss ")
            .append(2 + random.nextInt(1000) / 1000.0).append(" lr 3.0e-04 grad_norm ")
            .append(random.nextInt(500) / 100.0);
        emit();
      }
      if (op % 512 == 0) {
        line.setLength(0);
        line.append("Training:  ").append(step % 100).append("%|").append("#".repeat((int) (step % 100) / 10))
            .append("| ").append(step).append("/100000 [12:34<56:07,  2.81it/s]");
        emit();
      }
    }
  }

  private void failure() throws IOException {
    int r = 3;
    int tid = pid(r) + 900;
    prefix(r, tid, "transport/net_ib.cc:1696");
    line.append("NET/IB : Got completion from peer ").append(PEER_OF_FAILURE)
        .append("<48213> with status=12 opcode=0 len=0 vendor err 129 (Recv)");
    emit();
    for (String at : new String[] {"transport/net.cc:1302 -> 6", "proxy.cc:698 -> 6",
        "proxy.cc:878 -> 6 [Progress Thread]"}) {
      prefix(r, tid, null);
      line.append(at);
      emit();
    }
    for (int x = 0; x < RANKS; x++) {
      prefix(x, pid(x) + 3, null);
      line.append("[Service thread] Connection closed by localRank ").append(r % 8);
      emit();
    }
  }
}

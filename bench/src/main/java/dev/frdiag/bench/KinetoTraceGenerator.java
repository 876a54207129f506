package dev.frdiag.bench;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Random;

/**
 * Writes one rank's PyTorch profiler trace in Kineto's JSON as a GPU training job's looks (the shape of HTA's real
 * {@code nccl_data.json.gz}: CPU ops with their arguments, runtime launches and their flows, compute kernels, and per
 * step two all-reduces as {@code record_param_comms} with Seq and Comms Id, an {@code nccl:all_reduce} annotation
 * and an {@code ncclDevKernel_*} kernel carrying the collective's keys), about 1.3 kB per event, until it reaches a
 * size. Every member's all-reduce ends together; the {@linkplain #STRAGGLER straggler}'s starts {@link #DELAY_NS}
 * late.
 */
final class KinetoTraceGenerator {
  /** The rank that issues every collective late. */
  static final int STRAGGLER = 13;
  static final long DELAY_NS = 8_000_000;
  /** Compute ops (CPU op, launch, kernel) per step. */
  private static final int OPS_PER_STEP = 48;
  /** The step's compute time: room for every compute op at its longest. */
  private static final long COMPUTE_NS = OPS_PER_STEP * 53_000L + 20_000;

  private KinetoTraceGenerator() {}

  /** Writes rank {@code rank} of {@code world} to {@code file}, {@code bytes} or a little more; returns its size. */
  static long write(Path file, int rank, int world, long bytes) throws IOException {
    // Every rank's events alike but the straggler's, so that a job's traces can be copied from two (writeJob).
    Random random = new Random(42);
    long base = 1_790_000_000_000_000_000L;
    StringBuilder members = new StringBuilder();
    for (int i = 0; i < world; i++) {
      members.append(i == 0 ? "" : ", ").append(i);
    }
    try (Writer w = new BufferedWriter(new OutputStreamWriter(Files.newOutputStream(file), StandardCharsets.UTF_8),
        1 << 16)) {
      w.write("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\"}],"
          + "\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + rank + ", \"world_size\": " + world
          + ", \"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": "
          + "\"cuda:nccl\", \"pg_size\": " + world + ", \"ranks\": [" + members + "]}], \"nccl_version\": \"2.27.3\"},"
          + "\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " + base + ",\n  \"traceEvents\": [\n");
      long written = 600;
      // Each step starts at the same instant on every rank; its compute fits COMPUTE_NS whatever its kernels' random
      // lengths, so only the straggler's delay sets the ranks' arrivals apart.
      long stepStart = 4_000_000_000_000L;
      long ext = 1;
      long correlation = 1;
      long seq = 0;
      boolean first = true;
      while (written < bytes) {
        long t = stepStart;
        for (int op = 0; op < OPS_PER_STEP; op++) {
          long dur = 20_000 + random.nextInt(30_000);
          written += event(w, first, cpuOp(t, ext, op));
          first = false;
          written += event(w, false, launch(t + 2_000, ext, correlation));
          written += event(w, false, kernel(t + 15_000, dur, ext, correlation));
          written += event(w, false, flow("s", t + 2_000, correlation, 1234));
          written += event(w, false, flow("f", t + 15_000, correlation, 7));
          t += dur + 3_000;
          ext++;
          correlation++;
        }
        t = stepStart + COMPUTE_NS;
        for (int c = 0; c < 2; c++) {
          seq++;
          long late = rank == STRAGGLER ? DELAY_NS : 0;
          long end = t + DELAY_NS + 900_000;
          written += event(w, false, paramComms(t + late, ext, seq, world, members));
          written += event(w, false, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"nccl:all_reduce\", "
              + "\"pid\": 1234, \"tid\": 1234, \"ts\": " + us(t + late + 20_000) + ", \"dur\": 80.500, \"args\": "
              + "{\"External id\": " + (ext + 1) + ", \"Record function id\": 0, \"Ev Idx\": " + ext + "}}");
          written += event(w, false, launch(t + late + 30_000, ext, correlation));
          written += event(w, false, commKernel(t + late + 40_000, end - (t + late + 40_000), ext, correlation, seq,
              world, members));
          t = end + 50_000;
          ext += 2;
          correlation++;
        }
        stepStart = t + 100_000;
      }
      w.write("\n  ],\n  \"traceName\": \"" + file.getFileName() + "\"\n}\n");
    }
    return Files.size(file);
  }

  /**
   * Writes the traces of a job of {@code world} ranks into {@code dir}, each {@code bytes} or a little more: two
   * generated (a rank's and the straggler's), the others copies of the first with their own rank in the header.
   *
   * @return the bytes written in all
   */
  static long writeJob(Path dir, int world, long bytes) throws IOException {
    if (world <= STRAGGLER) {
      throw new IllegalArgumentException("a job of " + world + " ranks has no rank " + STRAGGLER + " to slow");
    }
    Path template = dir.resolve("rank0.pt.trace.json");
    long total = write(template, 0, world, bytes);
    total += write(dir.resolve("rank" + STRAGGLER + ".pt.trace.json"), STRAGGLER, world, bytes);
    byte[] head;
    try (java.io.InputStream in = Files.newInputStream(template)) {
      head = in.readNBytes(4096);
    }
    String text = new String(head, StandardCharsets.UTF_8);
    int body = text.indexOf("\"traceEvents\": [\n") + "\"traceEvents\": [\n".length();
    String header = text.substring(0, body);
    try (java.nio.channels.FileChannel src = java.nio.channels.FileChannel.open(template)) {
      long bodyBytes = src.size() - header.getBytes(StandardCharsets.UTF_8).length;
      for (int r = 1; r < world; r++) {
        if (r == STRAGGLER) {
          continue;
        }
        Path f = dir.resolve("rank" + r + ".pt.trace.json");
        try (java.nio.channels.FileChannel out = java.nio.channels.FileChannel.open(f,
            java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE)) {
          out.write(java.nio.ByteBuffer.wrap(header.replace("\"rank\": 0,", "\"rank\": " + r + ",")
              .getBytes(StandardCharsets.UTF_8)));
          long from = header.getBytes(StandardCharsets.UTF_8).length;
          long copied = 0;
          while (copied < bodyBytes) {
            copied += src.transferTo(from + copied, bodyBytes - copied, out);
          }
        }
        total += Files.size(f);
      }
    }
    return total;
  }

  private static long event(Writer w, boolean first, String json) throws IOException {
    if (!first) {
      w.write(",\n");
    }
    w.write("  ");
    w.write(json);
    return json.length() + 4;
  }

  /** Microseconds with exactly three decimals, as Kineto prints them. */
  private static String us(long ns) {
    return ns / 1000 + "." + String.format(Locale.ROOT, "%03d", ns % 1000);
  }

  private static String cpuOp(long t, long ext, int op) {
    return "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1234, \"tid\": 1234, \"ts\": " + us(t)
        + ", \"dur\": 12.345, \"args\": {\"External id\": " + ext + ", \"Sequence number\": " + (ext * 3) + ", "
        + "\"Fwd thread id\": 0, \"Record function id\": 0, \"Concrete Inputs\": [\"\", \"\"], \"Input type\": "
        + "[\"c10::BFloat16\", \"c10::BFloat16\"], \"Input Strides\": [[4096, 1], [1, 4096]], \"Input Dims\": "
        + "[[8192, 4096], [4096, " + (1024 + op) + "]], \"Ev Idx\": " + ext + "}}";
  }

  private static String launch(long t, long ext, long correlation) {
    return "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1234, \"tid\": 1234, "
        + "\"ts\": " + us(t) + ", \"dur\": 6.120, \"args\": {\"External id\": " + ext + ", \"cbid\": 211, "
        + "\"correlation\": " + correlation + "}}";
  }

  private static String kernel(long t, long dur, long ext, long correlation) {
    return "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tile"
        + "size128x256x64"
        + "_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas\", \"pid\": 0, \"tid\": 7, \"ts\": "
        + us(t)
        + ", \"dur\": " + us(dur) + ", \"args\": {\"External id\": " + ext + ", \"queued\": 0, \"device\": 0, "
        + "\"context\": 1, \"stream\": 7, \"correlation\": " + correlation + ", \"registers per thread\": 168, "
        + "\"shared memory\": 213248, \"blocks per SM\": 1.0, \"warps per SM\": 12.0, \"grid\": [132, 1, 1], "
        + "\"block\": [384, 1, 1], \"est. achieved occupancy %\": 19}}";
  }

  private static String flow(String ph, long t, long id, int pid) {
    return "{\"ph\": \"" + ph + "\", \"id\": " + id + ", \"pid\": " + pid + ", \"tid\": " + (pid == 7 ? 7 : 1234)
        + ", \"ts\": " + us(t) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\"" + (ph.equals("f") ? ", \"bp\": \"e\"" : "")
        + "}";
  }

  private static String keys(long seq, int world, StringBuilder members) {
    return "\"Collective name\": \"allreduce\", \"In msg nelems\": 16777216, \"Out msg nelems\": 16777216, "
        + "\"Group size\": " + world + ", \"dtype\": \"BFloat16\", \"In split size\": \"[]\", \"Out split size\": "
        + "\"[]\", \"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", "
        + "\"Process Group Ranks\": \"[" + members + "]\", \"Seq\": " + seq + ", \"Comms Id\": "
        + Long.toUnsignedString(0x9e3779b97f4a7c15L * seq);
  }

  private static String paramComms(long t, long ext, long seq, int world, StringBuilder members) {
    return "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 1234, \"tid\": 1234, "
        + "\"ts\": " + us(t) + ", \"dur\": 150.250, \"args\": {\"External id\": " + ext + ", \"Record function id\": "
        + "0, " + keys(seq, world, members) + ", \"Rank\": 0, \"Global rank start\": 0, \"Global rank stride\": 1, "
        + "\"Ev Idx\": " + ext + "}}";
  }

  private static String commKernel(long t, long dur, long ext, long correlation, long seq, int world,
      StringBuilder members) {
    return "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_bf16_RING_LL\", \"pid\": 0, "
        + "\"tid\": 21, \"ts\": " + us(t) + ", \"dur\": " + us(dur) + ", \"args\": {\"External id\": " + ext
        + ", \"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 21, \"correlation\": " + correlation + ", "
        + keys(seq, world, members) + "}}";
  }
}

package dev.frdiag.readers.pytorch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.ThreadStack;
import dev.frdiag.proto.v1.ThreadStacks;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Real stack dumps from torch 2.13.0+cpu worker servers (resources/stack_dumps/README.md). */
class StackDumpReaderTest {
  private static Path sample(String name) throws Exception {
    return Path.of(StackDumpReaderTest.class.getResource("/stack_dumps/" + name).toURI());
  }

  @Test
  void readsFaulthandlerThreadsWithTheirIdsAndFramesInnermostFirst() throws Exception {
    ThreadStacks s = StackDumpReader.create().read(sample("dump_traceback_pp_stall_rank_0.txt"));

    assertThat(s.getSource()).isEqualTo("dump_traceback_pp_stall_rank_0.txt");
    assertThat(s.getThreadsList()).extracting(ThreadStack::getThreadId, ThreadStack::getFramesCount)
        .containsExactly(tuple(0x00007f20b4f276c0L, 0), tuple(0x00007f20d566cb80L, 6));
    ThreadStack main = s.getThreads(1);
    assertThat(main.getFrames(0)).isEqualTo(Frame.newBuilder().setName("send").setLine(2753).setFilename(
        "/work/torchlab/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py").build());
    assertThat(main.getFrames(5).getName()).isEqualTo("<module>");
    assertThat(main.getName()).isEmpty();
  }

  @Test
  void readsEveryFaulthandlerThreadMainThreadLast() throws Exception {
    ThreadStacks s = StackDumpReader.create().read(sample("dump_traceback_agent_stall_rank_2.txt"));

    assertThat(s.getThreadsList()).extracting(t -> t.getFramesCount() == 0 ? "" : t.getFrames(0).getName())
        .containsExactly("", "watcher", "sleep_forever");
    assertThat(s.getThreads(2).getFrames(0).getLine()).isEqualTo(123);
  }

  @Test
  void readsPySpyThreadsWithNamesIdleFlagsAndNativeTids() throws Exception {
    ThreadStacks s = StackDumpReader.create().read(sample("pyspy_dump_agent_stall_rank_2.txt"));

    assertThat(s.getThreadsList()).extracting(ThreadStack::getThreadId, ThreadStack::getName, ThreadStack::getIdle)
        .containsExactly(tuple(3804L, "MainThread", true), tuple(3995L, "fr-watcher", true));
    assertThat(s.getThreads(0).getFramesList()).extracting(Frame::getName, Frame::getFilename, Frame::getLine)
        .startsWith(tuple("sleep_forever", "train.py", 123), tuple("fault_here", "train.py", 131));
  }

  @Test
  void readsPySpyNativeFramesWithoutLines() throws Exception {
    ThreadStacks s = StackDumpReader.create().read(sample("pyspy_dump_native_stall_tp_rank_0.txt"));

    ThreadStack main = s.getThreads(0);
    assertThat(main.getFramesList()).extracting(Frame::getName, Frame::getFilename, Frame::getLine)
        .contains(tuple("pthread_cond_wait", "libc.so.6", 0), tuple("c10d::Work::wait", "libtorch_cpu.so", 0),
            tuple("all_reduce", "torch/distributed/distributed_c10d.py", 3252));
    assertThat(main.getFrames(main.getFramesCount() - 1).getName()).isEqualTo("0x7f4da1e4524a");
  }

  @Test
  void saysWhatItLookedForWhenTheAnswerIsAnError() throws Exception {
    assertThatThrownBy(() -> StackDumpReader.create().read(sample("pyspy_dump_pp_stall_rank_0.txt")))
        .isInstanceOf(NotAStackDumpException.class)
        .hasMessage("pyspy_dump_pp_stall_rank_0.txt: not a stack dump: looked for faulthandler's 'Thread 0x… "
            + "(most recent call first):' or py-spy's 'Process N:' and 'Thread N (idle|active)' lines, found "
            + "'sh: 1: py-spy: not found'");
    assertThat(StackDumpReader.looksLikeStackDump("sh: 1: py-spy: not found\n")).isFalse();
  }

  @Test
  void internsFramesAcrossDumps() throws Exception {
    StackDumpReader reader = StackDumpReader.create();
    Frame a = reader.read(sample("dump_traceback_pp_stall_rank_0.txt")).getThreads(1).getFrames(5);
    Frame b = reader.read(sample("dump_traceback_pp_stall_rank_0.txt")).getThreads(1).getFrames(5);

    assertThat(a).isSameAs(b);
  }

  @Test
  void takesTheRankFromTheLastNumberOfTheFileName() {
    assertThat(StackDumpReader.rankFromFileName("dump_traceback_rank_2.txt")).hasValue(2);
    assertThat(StackDumpReader.rankFromFileName("stacks_12")).hasValue(12);
    assertThat(StackDumpReader.rankFromFileName("py-spy-rank2.txt")).hasValue(2);
    assertThat(StackDumpReader.rankFromFileName("stacks.txt")).isEmpty();
  }
}

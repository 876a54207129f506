package dev.frdiag.analysis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.frdiag.proto.v1.CollectiveState;
import dev.frdiag.proto.v1.Frame;
import dev.frdiag.proto.v1.Symptom;
import dev.frdiag.proto.v1.ThreadStack;
import dev.frdiag.proto.v1.ThreadStacks;
import dev.frdiag.proto.v1.Verdict;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The ranks' Python stacks as evidence (DIAGNOSIS.md §12), on a hand-built pipeline-like job: two stage groups
 * whose #6 only one member issued each, rank 0 in a and rank 2 in b, as if both were stalled on the CPU.
 */
class PythonStacksTest {
  private static final String C10D = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py";

  private static Snapshots twoStalls() {
    Snapshots s = new Snapshots(4).group("a", 0, 1).group("b", 2, 3);
    for (int i = 0; i < 5; i++) {
      s.all("a", "all_reduce", CollectiveState.COMPLETED).all("b", "all_reduce", CollectiveState.COMPLETED);
    }
    return s.only("a", "all_reduce", CollectiveState.SCHEDULED, 1).only("b", "all_reduce", CollectiveState.SCHEDULED,
        3);
  }

  private static Frame frame(String name, String file, int line) {
    return Frame.newBuilder().setName(name).setFilename(file).setLine(line).build();
  }

  private static ThreadStack thread(long id, String name, Frame... innermostFirst) {
    return ThreadStack.newBuilder().setThreadId(id).setName(name).addAllFrames(List.of(innermostFirst)).build();
  }

  /** faulthandler's order: the worker server's own thread first, with no Python frame; the main thread last. */
  private static ThreadStacks dump(ThreadStack... threads) {
    ThreadStacks.Builder b = ThreadStacks.newBuilder().setSource("dump_traceback")
        .addThreads(thread(0x7f20b4f276c0L, ""));
    return b.addAllThreads(List.of(threads)).build();
  }

  private static ThreadStacks inSend() {
    return dump(thread(0x7f20d566cb80L, "", frame("send", C10D, 2753), frame("wrapper",
        "/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", 83),
        frame("step_pipeline", "/work/train.py", 191)));
  }

  private static ThreadStacks asleep() {
    return dump(thread(0x7f27775ebb80L, "", frame("sleep_forever", "/work/train.py", 106),
        frame("step_pipeline", "/work/train.py", 195)));
  }

  @Test
  void withoutStacksBothRanksThatNeverIssuedAreCulprits() {
    Diagnosis d = HangAnalyzer.analyze(twoStalls().offline());

    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(0, 2);
    assertThat(d.evidence()).extracting(Evidence::kind).doesNotContain(Evidence.Kind.PYTHON_STACK);
    assertThat(d.culprits()).allSatisfy(c -> assertThat(c.threads()).isEmpty());
  }

  @Test
  void aRankInsideATorchDistributedCallWaitsForAPeerAndIsNotACulprit() {
    Diagnosis d = HangAnalyzer.analyze(twoStalls().stacks(0, inSend()).offline());

    assertThat(d.verdict()).isEqualTo(Verdict.HANG);
    assertThat(d.symptom()).isEqualTo(Symptom.CPU_STALL);
    assertThat(d.culpritRanks()).containsExactly(2);
    assertThat(d.collective().processGroup()).isEqualTo("b");
    assertThat(d.evidence()).filteredOn(e -> e.kind() == Evidence.Kind.PYTHON_STACK).extracting(Evidence::detail)
        .containsExactly("Rank 0 is inside send (distributed_c10d.py:2753): waiting for a peer, not the cause "
            + "(Python stack from dump_traceback)");
  }

  @Test
  void aRankOutsideTorchDistributedIsStuckWhereItsStackSays() {
    Diagnosis d = HangAnalyzer.analyze(twoStalls().stacks(0, inSend()).stacks(2, asleep()).offline());

    assertThat(d.culpritRanks()).containsExactly(2);
    assertThat(d.evidence()).filteredOn(e -> e.kind() == Evidence.Kind.PYTHON_STACK).extracting(Evidence::detail)
        .first().isEqualTo("Rank 2 is at sleep_forever (train.py:106), outside torch.distributed (Python stack "
            + "from dump_traceback): stuck there, not waiting for a peer");
    Culprit c = d.culprits().get(0);
    assertThat(c.stuckAt()).isEqualTo("sleep_forever (train.py:106)");
    assertThat(c.stacksFrom()).isEqualTo("dump_traceback");
    assertThat(c.threads()).containsExactly(new Culprit.PythonThread("0x7f27775ebb80", "", true, false,
        List.of("sleep_forever (train.py:106)", "step_pipeline (train.py:195)")));
  }

  @Test
  void theMainThreadIsTheOneTheRanksRecordsName() {
    // Rank 0's last block is a helper thread in its own code; the thread its records name is inside send.
    ThreadStacks stacks = dump(thread(111, "", frame("send", C10D, 2753)),
        thread(222, "", frame("watcher", "/work/train.py", 113)));

    assertThat(HangAnalyzer.analyze(twoStalls().stacks(0, stacks).thread(0, 111).offline()).culpritRanks())
        .containsExactly(2);
    assertThat(HangAnalyzer.analyze(twoStalls().stacks(0, stacks).offline()).culpritRanks())
        .as("without a thread id in its records, faulthandler's last block is the main thread").containsExactly(0, 2);
  }

  @Test
  void pySpysMainThreadIsTheOneItNamesSo() {
    ThreadStacks stacks = ThreadStacks.newBuilder().setSource("pyspy_dump")
        .addThreads(thread(3804, "MainThread", frame("send", "torch/distributed/distributed_c10d.py", 2753)))
        .addThreads(thread(3995, "fr-watcher", frame("watcher", "train.py", 113))).build();

    assertThat(HangAnalyzer.analyze(twoStalls().stacks(0, stacks).offline()).culpritRanks()).containsExactly(2);
  }

  @Test
  void whenEveryRankThatNeverIssuedWaitsInACallNoneIsBlamed() {
    Diagnosis d = HangAnalyzer.analyze(twoStalls().stacks(0, inSend()).stacks(2, inSend()).offline());

    assertThat(d.culpritRanks()).isEmpty();
    assertThat(d.verdict()).isEqualTo(Verdict.INSUFFICIENT_EVIDENCE);
    assertThat(d.evidence()).filteredOn(e -> e.kind() == Evidence.Kind.PYTHON_STACK).extracting(Evidence::ranks)
        .containsExactly(List.of(0), List.of(2));
  }

  @Test
  void anErrorAnswerOrAThreadWithoutPythonFramesKeepsTodaysReading() {
    ThreadStacks error = ThreadStacks.newBuilder().setSource("pyspy_dump").setError("sh: 1: py-spy: not found")
        .build();

    assertThat(HangAnalyzer.analyze(twoStalls().stacks(0, error).stacks(2, dump()).offline()).culpritRanks())
        .containsExactly(0, 2);
  }
}

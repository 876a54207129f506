package dev.frdiag.readers.pytorch;

/**
 * How many more values the decoder may visit in one dump. A pickle can refer to one container many times
 * through its memo, so the values visited are counted against a budget proportional to the file size: a small
 * file cannot make the decoder build a huge dump. Not thread-safe.
 */
final class ValueBudget {
  private long remaining;
  private long spent;

  ValueBudget(long values) {
    this.remaining = values;
  }

  /** Values visited so far. */
  long spent() {
    return spent;
  }

  /** @throws DumpProblem once more values have been visited than the budget allows */
  void spend(long values) {
    remaining -= values;
    spent += values;
    if (remaining < 0) {
      throw exceeded();
    }
  }

  // Apart from spend, which every entry calls several times: the client compiler inlines only small methods.
  private static DumpProblem exceeded() {
    return new DumpProblem("the dump expands to more values than its size allows: it refers to the same"
        + " containers over and over, which PyTorch never does");
  }
}

package dev.frdiag.analysis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The keys the analysis matches operations by, whose equals and hashCode are written out rather than generated:
 * two keys are one operation exactly when every component is the same.
 */
class OperationKeysTest {
  private static final GroupKey TP = new GroupKey("tp", 0, 1, 8);

  @Test
  void groupKeysDifferInEachComponent() {
    assertSame(TP, new GroupKey("tp", 0, 1, 8));
    for (GroupKey other : List.of(new GroupKey("dp", 0, 1, 8), new GroupKey("tp", 8, 1, 8),
        new GroupKey("tp", 0, 2, 8), new GroupKey("tp", 0, 1, 4))) {
      assertNotEquals(TP, other);
    }
  }

  @Test
  void stuckOperationKeysDifferInEachComponent() {
    StuckOp.Key key = new StuckOp.Key(TP, 42, false, -1);
    assertSame(key, new StuckOp.Key(new GroupKey("tp", 0, 1, 8), 42, false, -1));
    for (StuckOp.Key other : List.of(new StuckOp.Key(new GroupKey("tp", 0, 1, 4), 42, false, -1),
        new StuckOp.Key(TP, 43, false, -1), new StuckOp.Key(TP, 42, true, -1), new StuckOp.Key(TP, 42, false, 3))) {
      assertNotEquals(key, other);
    }
  }

  @Test
  void collectiveRefsDifferInEachComponent() {
    CollectiveRef ref = new CollectiveRef("tp", "tensor", 42, false, "all_reduce", "00000000000000ab");
    assertSame(ref, new CollectiveRef("tp", "tensor", 42, false, "all_reduce", "00000000000000ab"));
    for (CollectiveRef other : List.of(new CollectiveRef("dp", "tensor", 42, false, "all_reduce", "00000000000000ab"),
        new CollectiveRef("tp", "", 42, false, "all_reduce", "00000000000000ab"),
        new CollectiveRef("tp", "tensor", 41, false, "all_reduce", "00000000000000ab"),
        new CollectiveRef("tp", "tensor", 42, true, "all_reduce", "00000000000000ab"),
        new CollectiveRef("tp", "tensor", 42, false, "broadcast", "00000000000000ab"),
        new CollectiveRef("tp", "tensor", 42, false, "all_reduce", ""))) {
      assertNotEquals(ref, other);
    }
  }

  /** Equal, with equal hashes, in both directions. */
  private static void assertSame(Object a, Object b) {
    assertEquals(a, b);
    assertEquals(b, a);
    assertEquals(a.hashCode(), b.hashCode());
  }
}

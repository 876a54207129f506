package dev.frdiag.daemon.registry;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.frdiag.proto.v1.CollectiveRecord;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

/** The checks a record passes before its job takes it in. */
class TemplateTableTest {

  private static void refused(ThrowingCallable check, String description) {
    assertThatThrownBy(check).isExactlyInstanceOf(IllegalArgumentException.class).hasMessage(description);
  }

  private static void accepted(ThrowingCallable check) {
    assertThatCode(check).doesNotThrowAnyException();
  }

  private static CollectiveRecord.Builder record() {
    return CollectiveRecord.newBuilder().setRecordId(7).setProcessGroup("0").setOp("all_reduce")
        .setCollectiveSeq(3).setTimeCreatedNs(1);
  }

  @Test
  void recordNamesAnAnnouncedGroup() {
    accepted(() -> TemplateTable.record(record().build(), true));
    refused(() -> TemplateTable.record(record().build(), false),
        "record 7 names process group '0' that was never announced");
    refused(() -> TemplateTable.record(record().setProcessGroup("g".repeat(100)).build(), false),
        "record 7 names process group '" + "g".repeat(64) + "…' that was never announced");
  }

  @Test
  void recordHasAnOpAndACreationTime() {
    refused(() -> TemplateTable.record(record().setOp("").build(), true), "record 7 has no op name");
    refused(() -> TemplateTable.record(record().setTimeCreatedNs(0).build(), true),
        "record 7 has no time_created_ns");
    refused(() -> TemplateTable.record(record().setTimeCreatedNs(-5).build(), true),
        "record 7 has no time_created_ns");
  }

  @Test
  void recordSeqOfItsKindIsNotNegative() {
    accepted(() -> TemplateTable.record(record().setCollectiveSeq(0).build(), true));
    refused(() -> TemplateTable.record(record().setCollectiveSeq(-1).build(), true),
        "record 7 has a negative seq");
    // A P2P op is numbered by its p2p seq; the collective seq is not its own.
    accepted(() -> TemplateTable.record(record().setIsP2P(true).setCollectiveSeq(-1).setP2PSeq(0).build(), true));
    refused(() -> TemplateTable.record(record().setIsP2P(true).setCollectiveSeq(3).setP2PSeq(-1).build(), true),
        "record 7 has a negative seq");
  }
}

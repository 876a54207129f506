package dev.frdiag.proto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.frdiag.proto.v1.ProcessGroup;
import java.io.InputStream;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class CommsIdTest {

  @Test
  void matchesTheIndependentlyComputedVectors() throws Exception {
    JsonNode vectors;
    try (InputStream in = CommsIdTest.class.getResourceAsStream("/comms_id_vectors.json")) {
      vectors = new ObjectMapper().readTree(in).get("vectors");
    }
    assertThat(vectors.size()).isGreaterThan(10);
    for (JsonNode v : vectors) {
      int[] ranks = ranksOf(v.get("ranks"));
      CommsId.GroupLayout layout = CommsId.layoutOf(ranks);
      String what = v.toString();
      assertThat(layout.start()).as(what).isEqualTo(v.get("global_rank_start").asLong());
      assertThat(layout.stride()).as(what).isEqualTo(v.get("global_rank_stride").asLong());
      assertThat(layout.size()).as(what).isEqualTo(v.get("world_size").asLong());
      long id = CommsId.of(v.get("pg_name").asText(), v.get("seq").asLong(), v.get("is_p2p").asBoolean(), layout);
      assertThat(CommsId.format(id)).as(what).isEqualTo(v.get("comms_id").asText());
    }
  }

  @Test
  void memberOrderDoesNotChangeTheLayout() {
    assertThat(CommsId.layoutOf(new int[] {13, 1, 9, 5})).isEqualTo(new CommsId.GroupLayout(1, 4, 4));
  }

  @Test
  void aGroupGetsTheLayoutItsMembersGiveIt() {
    ProcessGroup g = CommsId.withLayout(ProcessGroup.newBuilder().setName("tp").addRanks(13).addRanks(1).addRanks(9)
        .addRanks(5).build());
    assertThat(g.getGlobalRankStart()).isEqualTo(1);
    assertThat(g.getGlobalRankStride()).isEqualTo(4);
    assertThat(g.getRanksList()).containsExactly(13, 1, 9, 5);
    assertThatThrownBy(() -> CommsId.withLayout(ProcessGroup.newBuilder().setName("empty").build()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void groupsWithSameNameAndSizeButOtherMembersGetDifferentIds() {
    long a = CommsId.of("split", 5, false, CommsId.layoutOf(new int[] {0, 1, 3}));
    long b = CommsId.of("split", 5, false, CommsId.layoutOf(new int[] {0, 2, 3}));
    assertThat(a).isNotEqualTo(b);
  }

  @Test
  void collectiveAndP2pWithTheSameSeqDiffer() {
    CommsId.GroupLayout pair = CommsId.layoutOf(new int[] {3, 11});
    assertThat(CommsId.of("pp", 12, true, pair)).isNotEqualTo(CommsId.of("pp", 12, false, pair));
  }

  @Test
  void rejectsGroupsThatCannotExist() {
    assertThatThrownBy(() -> CommsId.layoutOf(new int[0])).hasMessageContaining("at least one member");
    assertThatThrownBy(() -> CommsId.layoutOf(new int[] {1, 2, 1})).hasMessageContaining("appears twice");
    assertThatThrownBy(() -> CommsId.layoutOf(new int[] {-1, 2})).hasMessageContaining("negative");
  }

  private static int[] ranksOf(JsonNode node) {
    if (node.isArray()) {
      int[] ranks = new int[node.size()];
      for (int i = 0; i < ranks.length; i++) {
        ranks[i] = node.get(i).asInt();
      }
      return ranks;
    }
    JsonNode range = node.get("range");
    return IntStream.range(range.get(0).asInt(), range.get(1).asInt()).toArray();
  }
}

package dev.frdiag.report;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.module.SimpleModule;
import dev.frdiag.analysis.CollectiveRef;
import dev.frdiag.analysis.Culprit;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import dev.frdiag.analysis.FabricMap;
import dev.frdiag.analysis.GroupProgress;
import dev.frdiag.analysis.Lateness;
import dev.frdiag.analysis.StuckCollective;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** Reads and writes {@link Report}s as {@code frdiag.report/v1} JSON (snake_case, fields only ever added). */
public final class ReportJson {
  private static final JsonFactory JSON = new JsonFactory();

  private ReportJson() {}

  /** Read only: built on first use, so that writing a report never pays for the data binding's start. */
  private static final class Mapper {
    static final ObjectMapper MAPPER = new ObjectMapper()
        .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
        // Readers of an older build must accept reports with fields added later.
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .registerModule(wireNames());
  }

  /**
   * The report as {@code frdiag.report/v1} JSON, indented. Written field by field rather than by the data binding:
   * the binding's first use (introspecting some thirty record types) cost a short {@code fr-diagnose --json} run
   * 0.2 s of its start, for an 18 KB document. {@link #read} reads back every field written here.
   */
  public static String write(Report report) {
    StringWriter text = new StringWriter(4096);
    try (JsonGenerator gen = JSON.createGenerator(text)) {
      gen.useDefaultPrettyPrinter();
      report(gen, report);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot serialise report " + report.reportId(), e);
    }
    return text.toString();
  }

  private static void report(JsonGenerator gen, Report r) throws IOException {
    gen.writeStartObject();
    string(gen, "schema", r.schema());
    string(gen, "report_id", r.reportId());
    string(gen, "job", r.job());
    gen.writeStringField("verdict", r.verdict().name());
    gen.writeStringField("symptom", r.symptom().name());
    string(gen, "headline", r.headline());
    ints(gen, "culprit_ranks", r.culpritRanks());
    strings(gen, "culprit_hosts", r.culpritHosts());
    gen.writeFieldName("collective");
    collective(gen, r.collective());
    gen.writeNumberField("confidence", r.confidence());
    gen.writeArrayFieldStart("evidence");
    for (Evidence e : r.evidence()) {
      gen.writeStartObject();
      gen.writeStringField("kind", e.kind().wire());
      ints(gen, "ranks", e.ranks());
      string(gen, "detail", e.detail());
      gen.writeEndObject();
    }
    gen.writeEndArray();
    gen.writeStringField("created_at", Report.time(r.createdAt()));
    gen.writeStringField("trigger", r.trigger().wire());
    gen.writeArrayFieldStart("timeline");
    for (Report.TimelineEntry t : r.timeline()) {
      gen.writeStartObject();
      string(gen, "at", t.time());
      string(gen, "event", t.event());
      gen.writeEndObject();
    }
    gen.writeEndArray();
    gen.writeArrayFieldStart("culprits");
    for (Culprit c : r.culprits()) {
      culprit(gen, c);
    }
    gen.writeEndArray();
    gen.writeArrayFieldStart("stuck_collectives");
    for (StuckCollective s : r.stuckCollectives()) {
      gen.writeStartObject();
      gen.writeFieldName("collective");
      collective(gen, s.collective());
      gen.writeBooleanField("root_cause", s.rootCause());
      ints(gen, "completed", s.completed());
      ints(gen, "waiting", s.waiting());
      ints(gen, "issued", s.issued());
      ints(gen, "not_issued", s.notIssued());
      ints(gen, "unknown", s.unknown());
      strings(gen, "blocked_by", s.blockedBy());
      gen.writeEndObject();
    }
    gen.writeEndArray();
    gen.writeArrayFieldStart("rank_states");
    for (Diagnosis.RankGroup g : r.rankStates()) {
      // {"state": "waiting in _all_gather_base #42 on tp", "ranks": [...]}: the state as one sentence.
      gen.writeStartObject();
      gen.writeStringField("state", g.label());
      ints(gen, "ranks", g.ranks());
      gen.writeEndObject();
    }
    gen.writeEndArray();
    string(gen, "recommendation", r.recommendation());
    // Left out when empty or null, as readers of reports written before these fields expect.
    if (!r.scheduler().isEmpty()) {
      gen.writeObjectFieldStart("scheduler");
      for (Map.Entry<String, String> e : r.scheduler().entrySet()) {
        string(gen, e.getKey(), e.getValue());
      }
      gen.writeEndObject();
    }
    if (!r.groupProgress().isEmpty()) {
      gen.writeArrayFieldStart("group_progress");
      for (GroupProgress p : r.groupProgress()) {
        groupProgress(gen, p);
      }
      gen.writeEndArray();
    }
    if (r.fabric() != null) {
      gen.writeFieldName("fabric");
      fabric(gen, r.fabric());
    }
    if (r.lateness() != null) {
      gen.writeFieldName("lateness");
      lateness(gen, r.lateness());
    }
    if (r.recoveredAt() != null) {
      gen.writeStringField("recovered_at", Report.time(r.recoveredAt()));
    }
    if (!r.exclude().isEmpty()) {
      strings(gen, "exclude", r.exclude());
    }
    gen.writeEndObject();
  }

  private static void collective(JsonGenerator gen, CollectiveRef c) throws IOException {
    if (c == null) {
      gen.writeNull();
      return;
    }
    gen.writeStartObject();
    string(gen, "process_group", c.processGroup());
    string(gen, "process_group_desc", c.processGroupDesc());
    gen.writeNumberField("seq", c.seq());
    gen.writeBooleanField("is_p2p", c.isP2p());
    string(gen, "op", c.op());
    string(gen, "comms_id", c.commsId());
    gen.writeEndObject();
  }

  private static void culprit(JsonGenerator gen, Culprit c) throws IOException {
    gen.writeStartObject();
    gen.writeNumberField("rank", c.rank());
    string(gen, "host", c.host());
    gen.writeNumberField("pid", c.pid());
    gen.writeNumberField("cuda_device", c.cudaDevice());
    string(gen, "last_op", c.lastOp());
    strings(gen, "stack", c.stack());
    strings(gen, "records", c.records());
    // The stack fields came after v1's first reports: absent when empty, so older reports read the same.
    if (!c.stuckAt().isEmpty()) {
      gen.writeStringField("stuck_at", c.stuckAt());
    }
    if (!c.stacksFrom().isEmpty()) {
      gen.writeStringField("stacks_from", c.stacksFrom());
    }
    if (!c.threads().isEmpty()) {
      gen.writeArrayFieldStart("threads");
      for (Culprit.PythonThread t : c.threads()) {
        gen.writeStartObject();
        string(gen, "id", t.id());
        string(gen, "name", t.name());
        gen.writeBooleanField("main", t.main());
        gen.writeBooleanField("idle", t.idle());
        strings(gen, "frames", t.frames());
        gen.writeEndObject();
      }
      gen.writeEndArray();
    }
    gen.writeEndObject();
  }

  private static void groupProgress(JsonGenerator gen, GroupProgress p) throws IOException {
    gen.writeStartObject();
    gen.writeFieldName("collective");
    collective(gen, p.collective());
    gen.writeBooleanField("root_cause", p.rootCause());
    gen.writeNumberField("first_seq", p.firstSeq());
    gen.writeBooleanField("starts_recorded", p.startsRecorded());
    gen.writeArrayFieldStart("rows");
    for (GroupProgress.Row row : p.rows()) {
      gen.writeStartObject();
      string(gen, "host", row.host());
      ints(gen, "ranks", row.ranks());
      string(gen, "cells", row.cells());
      gen.writeBooleanField("lost", row.lost());
      gen.writeBooleanField("culprit", row.culprit());
      gen.writeEndObject();
    }
    gen.writeEndArray();
    gen.writeEndObject();
  }

  private static void fabric(JsonGenerator gen, FabricMap f) throws IOException {
    gen.writeStartObject();
    gen.writeArrayFieldStart("hosts");
    for (FabricMap.Host h : f.hosts()) {
      gen.writeStartObject();
      string(gen, "name", h.name());
      gen.writeBooleanField("culprit", h.culprit());
      gen.writeArrayFieldStart("gpus");
      for (FabricMap.Gpu g : h.gpus()) {
        gen.writeStartObject();
        gen.writeNumberField("rank", g.rank());
        gen.writeNumberField("device", g.device());
        string(gen, "bus_id", g.busId());
        string(gen, "nic", g.nic());
        gen.writeBooleanField("culprit", g.culprit());
        marks(gen, g.marks());
        gen.writeEndObject();
      }
      gen.writeEndArray();
      gen.writeArrayFieldStart("nics");
      for (FabricMap.Nic n : h.nics()) {
        gen.writeStartObject();
        string(gen, "name", n.name());
        gen.writeArrayFieldStart("ports");
        for (FabricMap.Port p : n.ports()) {
          gen.writeStartObject();
          gen.writeNumberField("number", p.number());
          marks(gen, p.marks());
          gen.writeEndObject();
        }
        gen.writeEndArray();
        marks(gen, n.marks());
        gen.writeEndObject();
      }
      gen.writeEndArray();
      marks(gen, h.marks());
      gen.writeEndObject();
    }
    gen.writeEndArray();
    gen.writeNumberField("other_hosts", f.otherHosts());
    gen.writeEndObject();
  }

  private static void marks(JsonGenerator gen, List<FabricMap.Mark> marks) throws IOException {
    gen.writeArrayFieldStart("marks");
    for (FabricMap.Mark m : marks) {
      gen.writeStartObject();
      gen.writeStringField("kind", m.kind().wire());
      string(gen, "detail", m.detail());
      string(gen, "source", m.source());
      string(gen, "peer", m.peer());
      gen.writeEndObject();
    }
    gen.writeEndArray();
  }

  private static void lateness(JsonGenerator gen, Lateness l) throws IOException {
    gen.writeStartObject();
    string(gen, "basis", l.basis());
    string(gen, "joined_by", l.joinedBy());
    gen.writeNumberField("collectives", l.collectives());
    gen.writeNumberField("threshold_ns", l.thresholdNs());
    gen.writeNumberField("normal_spread_ns", l.normalSpreadNs());
    gen.writeNumberField("window_start_ns", l.windowStartNs());
    gen.writeNumberField("bucket_ns", l.bucketNs());
    gen.writeArrayFieldStart("ranks");
    for (Lateness.Rank r : l.ranks()) {
      gen.writeStartObject();
      gen.writeNumberField("rank", r.rank());
      string(gen, "host", r.host());
      gen.writeNumberField("collectives", r.collectives());
      gen.writeNumberField("times_last", r.timesLast());
      gen.writeNumberField("median_late_ns", r.medianLateNs());
      gen.writeNumberField("max_late_ns", r.maxLateNs());
      gen.writeNumberField("waited_ns", r.waitedNs());
      gen.writeNumberField("clock_offset_ns", r.clockOffsetNs());
      gen.writeNumberField("exposed_comm_ns", r.exposedCommNs());
      gen.writeNumberField("hidden_share", r.hiddenShare());
      gen.writeArrayFieldStart("late_by_bucket_ns");
      for (Long late : r.lateByBucketNs()) {
        // Null where the rank joined no collective in that bucket.
        if (late == null) {
          gen.writeNull();
        } else {
          gen.writeNumber(late);
        }
      }
      gen.writeEndArray();
      gen.writeBooleanField("culprit", r.culprit());
      gen.writeEndObject();
    }
    gen.writeEndArray();
    gen.writeArrayFieldStart("worst");
    for (Lateness.Collective c : l.worst()) {
      gen.writeStartObject();
      string(gen, "collective", c.collective());
      gen.writeNumberField("last_rank", c.lastRank());
      gen.writeNumberField("skew_ns", c.skewNs());
      gen.writeNumberField("latency_ns", c.latencyNs());
      gen.writeNumberField("bus_gbps", c.busGbps());
      gen.writeEndObject();
    }
    gen.writeEndArray();
    gen.writeEndObject();
  }

  private static void string(JsonGenerator gen, String field, String value) throws IOException {
    gen.writeFieldName(field);
    if (value == null) {
      gen.writeNull();
    } else {
      gen.writeString(value);
    }
  }

  private static void ints(JsonGenerator gen, String field, List<Integer> values) throws IOException {
    gen.writeArrayFieldStart(field);
    for (Integer v : values) {
      gen.writeNumber(v);
    }
    gen.writeEndArray();
  }

  private static void strings(JsonGenerator gen, String field, List<String> values) throws IOException {
    gen.writeArrayFieldStart(field);
    for (String v : values) {
      if (v == null) {
        gen.writeNull();
      } else {
        gen.writeString(v);
      }
    }
    gen.writeEndArray();
  }

  /**
   * Parses a report and checks that every field its readers rely on is there (only {@code collective} may be null,
   * and the fields the JSON leaves out when null: {@code fabric}, {@code lateness}, {@code recovered_at}).
   *
   * @throws IllegalArgumentException naming what is wrong, and the field, when the text is not a whole
   *     frdiag.report/v1 document
   */
  public static Report read(String json) {
    Report report;
    try {
      report = Mapper.MAPPER.readValue(json, Report.class);
    } catch (JsonMappingException e) {
      String at = path(e);
      throw new IllegalArgumentException("not a frdiag report: " + e.getOriginalMessage()
          + (at.isEmpty() ? "" : " (field " + at + ")"), e);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not a frdiag report: " + e.getOriginalMessage(), e);
    }
    if (report == null) {
      throw new IllegalArgumentException("not a frdiag report: the document is null");
    }
    if (!Report.SCHEMA.equals(report.schema())) {
      throw new IllegalArgumentException("unsupported report schema '" + report.schema() + "', expected "
          + Report.SCHEMA);
    }
    ReportFields.check(report);
    return report;
  }

  /** "evidence[2].kind": where in the document a mapping failed, in the document's own field names. */
  private static String path(JsonMappingException e) {
    StringBuilder sb = new StringBuilder();
    for (JsonMappingException.Reference r : e.getPath()) {
      if (r.getFieldName() != null) {
        sb.append(sb.length() == 0 ? "" : ".").append(r.getFieldName());
      } else if (r.getIndex() >= 0) {
        sb.append('[').append(r.getIndex()).append(']');
      }
    }
    return sb.toString();
  }

  /**
   * The report's closed sets and instants as the JSON has always spelled them: lower-case wire names rather than
   * Java constant names, ISO-8601 text rather than numbers, a rank group's state as one sentence.
   */
  private static SimpleModule wireNames() {
    SimpleModule m = new SimpleModule("frdiag.report/v1");
    m.addDeserializer(Evidence.Kind.class, fromText("evidence kind", Evidence.Kind::fromWire));
    m.addDeserializer(Report.Trigger.class, fromText("trigger", Report.Trigger::fromWire));
    m.addDeserializer(Instant.class, fromText("instant", ReportJson::instant));
    m.addDeserializer(Diagnosis.RankGroup.class, new RankGroupReader());
    return m;
  }

  private static Instant instant(String text) {
    try {
      return Instant.parse(text);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("'" + text + "' is not an ISO-8601 instant", e);
    }
  }

  private static <T> JsonDeserializer<T> fromText(String what, Function<String, T> parse) {
    return new JsonDeserializer<>() {
      @Override
      public T deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
        if (p.currentToken() != JsonToken.VALUE_STRING) {
          throw JsonMappingException.from(p, "expected a string for the " + what + ", got " + p.currentToken());
        }
        try {
          return parse.apply(p.getText());
        } catch (IllegalArgumentException e) {
          throw JsonMappingException.from(p, e.getMessage(), e);
        }
      }
    };
  }

  private static final class RankGroupReader extends JsonDeserializer<Diagnosis.RankGroup> {
    @Override
    public Diagnosis.RankGroup deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      JsonNode node = p.readValueAsTree();
      JsonNode state = node.get("state");
      JsonNode ranks = node.get("ranks");
      if (state == null || !state.isTextual()) {
        throw JsonMappingException.from(p, "rank group without a state");
      }
      List<Integer> members = new ArrayList<>();
      if (ranks != null) {
        for (JsonNode r : ranks) {
          if (!r.canConvertToInt()) {
            throw JsonMappingException.from(p, "rank group '" + state.asText() + "' has a rank that is not an int: "
                + r);
          }
          members.add(r.asInt());
        }
      }
      try {
        return Diagnosis.RankGroup.parse(state.asText(), members);
      } catch (IllegalArgumentException e) {
        throw JsonMappingException.from(p, e.getMessage(), e);
      }
    }
  }
}

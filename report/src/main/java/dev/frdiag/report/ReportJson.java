package dev.frdiag.report;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.module.SimpleModule;
import dev.frdiag.analysis.Culprit;
import dev.frdiag.analysis.Diagnosis;
import dev.frdiag.analysis.Evidence;
import java.io.IOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/** Reads and writes {@link Report}s as {@code frdiag.report/v1} JSON (snake_case, fields only ever added). */
public final class ReportJson {
  private static final ObjectMapper MAPPER = new ObjectMapper()
      .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .setSerializationInclusion(JsonInclude.Include.ALWAYS)
      .enable(SerializationFeature.INDENT_OUTPUT)
      // Readers of an older build must accept reports with fields added later.
      .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .registerModule(wireNames());

  private ReportJson() {}

  /** The report as {@code frdiag.report/v1} JSON, indented. */
  public static String write(Report report) {
    try {
      return MAPPER.writeValueAsString(report);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialise report " + report.reportId(), e);
    }
  }

  /**
   * Parses a report and checks that every field its readers rely on is there (only {@code collective} may be null,
   * and the fields the JSON leaves out when null: {@code fabric}, {@code lateness}).
   *
   * @throws IllegalArgumentException naming what is wrong, and the field, when the text is not a whole
   *     frdiag.report/v1 document
   */
  public static Report read(String json) {
    Report report;
    try {
      report = MAPPER.readValue(json, Report.class);
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
    m.addSerializer(Evidence.Kind.class, text(Evidence.Kind::wire));
    m.addDeserializer(Evidence.Kind.class, fromText("evidence kind", Evidence.Kind::fromWire));
    m.addSerializer(Report.Trigger.class, text(Report.Trigger::wire));
    m.addDeserializer(Report.Trigger.class, fromText("trigger", Report.Trigger::fromWire));
    m.addSerializer(Instant.class, text(Instant::toString));
    m.addDeserializer(Instant.class, fromText("instant", ReportJson::instant));
    m.setMixInAnnotation(Culprit.class, CulpritFields.class);
    m.addSerializer(Diagnosis.RankGroup.class, new RankGroupWriter());
    m.addDeserializer(Diagnosis.RankGroup.class, new RankGroupReader());
    return m;
  }

  /** A culprit's stack fields, added after v1's first reports: absent when empty, so older reports read the same. */
  private abstract static class CulpritFields {
    @JsonInclude(JsonInclude.Include.NON_EMPTY)
    abstract String stuckAt();

    @JsonInclude(JsonInclude.Include.NON_EMPTY)
    abstract String stacksFrom();

    @JsonInclude(JsonInclude.Include.NON_EMPTY)
    abstract List<Culprit.PythonThread> threads();
  }

  private static Instant instant(String text) {
    try {
      return Instant.parse(text);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("'" + text + "' is not an ISO-8601 instant", e);
    }
  }

  private static <T> JsonSerializer<T> text(Function<T, String> wire) {
    return new JsonSerializer<>() {
      @Override
      public void serialize(T value, JsonGenerator gen, SerializerProvider provider) throws IOException {
        gen.writeString(wire.apply(value));
      }
    };
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

  /** {"state": "waiting in _all_gather_base #42 on tp", "ranks": [...]}: the state as one sentence. */
  private static final class RankGroupWriter extends JsonSerializer<Diagnosis.RankGroup> {
    @Override
    public void serialize(Diagnosis.RankGroup g, JsonGenerator gen, SerializerProvider provider)
        throws IOException {
      gen.writeStartObject();
      gen.writeStringField("state", g.label());
      gen.writeFieldName("ranks");
      gen.writeStartArray();
      for (int rank : g.ranks()) {
        gen.writeNumber(rank);
      }
      gen.writeEndArray();
      gen.writeEndObject();
    }
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

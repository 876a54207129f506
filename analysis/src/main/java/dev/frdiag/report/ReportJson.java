package dev.frdiag.report;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;

/** Reads and writes {@link Report}s as {@code frdiag.report/v1} JSON (snake_case, fields only ever added). */
public final class ReportJson {
  private static final ObjectMapper MAPPER = new ObjectMapper()
      .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .setSerializationInclusion(JsonInclude.Include.ALWAYS)
      .enable(SerializationFeature.INDENT_OUTPUT)
      // Readers of an older build must accept reports with fields added later.
      .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  private ReportJson() {}

  public static String write(Report report) {
    try {
      return MAPPER.writeValueAsString(report);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialise report " + report.reportId(), e);
    }
  }

  /**
   * Parses a report.
   *
   * @throws IllegalArgumentException naming what is wrong when the text is not a frdiag.report/v1 document
   */
  public static Report read(String json) {
    Report report;
    try {
      report = MAPPER.readValue(json, Report.class);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not a frdiag report: " + e.getOriginalMessage(), e);
    }
    if (!Report.SCHEMA.equals(report.schema())) {
      throw new IllegalArgumentException("unsupported report schema '" + report.schema() + "', expected "
          + Report.SCHEMA);
    }
    return report;
  }
}

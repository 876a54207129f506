package dev.frdiag.readers.pytorch;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.io.JsonEOFException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JSON variant of a dump ({@code _dump_nccl_trace_json}, written by nlohmann::json), decoded into the same
 * value tree as the pickle: maps, lists, strings, numbers, booleans and null.
 */
final class JsonDumps {
  /** A dump nests five levels deep; anything much deeper is not a dump. */
  static final int MAX_NESTING = 32;

  static final ObjectMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
          .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_NESTING).build())
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .build())
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .build();

  private JsonDumps() {}

  /** @throws DumpProblem when {@code data[0, length)} is not well-formed JSON */
  static Object decode(byte[] data, int length) {
    JsonNode root;
    try {
      root = MAPPER.readTree(data, 0, length);
    } catch (JsonProcessingException e) {
      throw new DumpProblem(describe(e, length));
    } catch (IOException e) {
      throw new DumpProblem("unreadable JSON: " + e.getMessage());
    }
    if (root == null || root.isMissingNode()) {
      throw new DumpProblem("truncated JSON at byte " + length + " of " + length + ": no value");
    }
    return toValue(root);
  }

  private static String describe(JsonProcessingException e, int length) {
    JsonLocation at = e.getLocation();
    long offset = at == null ? -1 : at.getByteOffset();
    String detail = e.getOriginalMessage();
    int newline = detail.indexOf('\n');
    if (newline >= 0) {
      detail = detail.substring(0, newline);
    }
    if (e instanceof JsonEOFException || offset < 0 || offset >= length) {
      // The parser ran into the end of the input: the file was cut short.
      return "truncated JSON at byte " + length + " of " + length + ": " + detail;
    }
    return "invalid JSON at byte " + offset + " of " + length + " (line " + at.getLineNr() + ", column "
        + at.getColumnNr() + "): " + detail;
  }

  /** Nesting is bounded by {@link #MAX_NESTING}, so the recursion is too. */
  private static Object toValue(JsonNode node) {
    switch (node.getNodeType()) {
      case OBJECT: {
        Map<Object, Object> map = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> f : node.properties()) {
          map.put(f.getKey(), toValue(f.getValue()));
        }
        return map;
      }
      case ARRAY: {
        List<Object> list = new ArrayList<>(node.size());
        for (JsonNode item : node) {
          list.add(toValue(item));
        }
        return list;
      }
      case STRING:
        return node.textValue();
      case NUMBER:
        if (node.isIntegralNumber()) {
          return node.canConvertToLong() ? (Object) node.longValue() : node.bigIntegerValue();
        }
        return node.doubleValue();
      case BOOLEAN:
        return node.booleanValue();
      case NULL:
        return null;
      default:
        throw new DumpProblem("unexpected JSON value of type " + node.getNodeType());
    }
  }

  static boolean looksLikeJson(byte[] data, int length) {
    for (int i = 0; i < length; i++) {
      byte b = data[i];
      if (b == ' ' || b == '\t' || b == '\n' || b == '\r') {
        continue;
      }
      return b == '{';
    }
    return false;
  }
}

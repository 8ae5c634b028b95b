// Cross-checks callstream's single-object encoding with the Java Avro implementation:
// for each "<schema stem> <hex>" line on stdin, Java must compute the same schema fingerprint
// (SchemaNormalization) as the header carries, decode the bytes with BinaryMessageDecoder,
// and re-encode them to the same bytes. Run (see schemas/README.md):
//   cargo run -q -p callstream-schemas --example samples \
//     | java -cp "$AVRO_CLASSPATH" schemas/interop/JavaCheck.java schemas
import java.io.*;
import java.nio.ByteBuffer;
import java.util.*;
import org.apache.avro.*;
import org.apache.avro.generic.*;
import org.apache.avro.message.*;

public class JavaCheck {
  public static void main(String[] args) throws Exception {
    File dir = new File(args.length > 0 ? args[0] : "schemas");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    int failures = 0;
    for (String line; (line = in.readLine()) != null; ) {
      String[] parts = line.trim().split(" ");
      Schema schema = new Schema.Parser().parse(new File(dir, parts[0] + ".avsc"));
      byte[] bytes = HexFormat.of().parseHex(parts[1]);
      long fp = SchemaNormalization.parsingFingerprint64(schema);
      long header = ByteBuffer.wrap(bytes, 2, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
      BinaryMessageDecoder<GenericRecord> decoder = new BinaryMessageDecoder<>(GenericData.get(), schema);
      GenericRecord record = decoder.decode(bytes);
      byte[] again = new BinaryMessageEncoder<GenericRecord>(GenericData.get(), schema).encode(record).array();
      boolean same = Arrays.equals(bytes, again);
      boolean ok = fp == header;
      if (!ok) failures++;
      System.out.printf("%-20s fingerprint %016x %s, decoded %s, re-encoded %s%n", parts[0],
          fp, ok ? "matches" : "DIFFERS from header " + Long.toHexString(header),
          record.getSchema().getFullName(), same ? "identical" : "differently (map order?)");
    }
    System.exit(failures == 0 ? 0 : 1);
  }
}

// The fake target (fake_target.ts: stand-in maths on the SDK's target row skeleton) served over the wire, with no
// drafter: the target skeleton under mtp tck's §13 rules, which check an engine against the contract and itself.
//   ./mtp tck --backend exec:'node adapters/typescript/dist/examples/target_skeleton_backend.js' \
//       --rule required_s13_3_badCallCatalogue,required_s13_3_captureRestoreRoundTripIsByteIdentical
import { type Engine, F32_TOLERANCE, MtpError, serve, TargetShape, withTarget } from "../src/index.js";
import { FakeTargetRows } from "./fake_target.js";

const name = "ts-fake-target-skeleton";
const targetOnly: Engine = {
  name, version: "1.0",
  hello: () => ({ numerics: "fake target (stand-in maths), f32 state", capabilities: {},
    profiles: [{ label: name, options: {}, tolerance: F32_TOLERANCE }] }),
  load: () => { throw new MtpError("UNAVAILABLE", "load: this example runs the hybrid target only (fake_target.ts)"); },
};
serve(withTarget(targetOnly, { load: (a) => TargetShape.of(a.config, a.identity), rows: (s: TargetShape) => new FakeTargetRows(s) }));

package org.mtporacle.mlx;

import org.mtporacle.api.Availability;
import org.mtporacle.api.BackendProfile;
import org.mtporacle.api.MlpWeights;
import org.mtporacle.api.MtpBackend;
import org.mtporacle.api.MtpException;
import org.mtporacle.api.MtpModel;
import org.mtporacle.api.TargetModel;
import org.mtporacle.api.Tolerance;
import org.mtporacle.mlx.handle.MlxDiscovery;
import org.mtporacle.mlx.handle.MlxEnvironment;
import org.mtporacle.mlx.handle.MlxLibrary;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The MLX backend ({@code mlx}) through mlx-c. The library is found at run time ({@link MlxDiscovery}); when it is
 * missing or of another version the backend says so in {@link #availability()} and {@link #load} fails UNAVAILABLE.
 *
 * <p>Options: {@code precision=native|f32} (default native: the weights' dtype, bf16 for published companions) and
 * {@code device=auto|cpu|gpu} (default auto: the GPU when the library has Metal or CUDA, else the CPU), and for a MoE
 * layer {@code moe=gather|per-expert} (default gather: top-k on the device and the experts by {@code gather_mm} /
 * {@code gather_qmm}; per-expert when the experts do not share one format, and where MLX 0.31's CUDA backend cannot
 * run them, {@link MlxMoe#choose}). The
 * environment variable {@code MTP_MLX_DEVICE} sets the default of {@code device} for every profile, so a whole
 * {@code mtp conform} run can be held on one device; {@code MTP_MLX_MOE} likewise sets the default of {@code moe}.
 * {@code compile=off|on} (default off; {@code MTP_MLX_COMPILE} sets the default): one-position forwards run the
 * block's fixed-shape parts (before the cache append, after attention, the head) through {@code mlx_compile}, so
 * MLX fuses their elementwise chains and replays a traced graph instead of the backend building it op by op.
 * {@code gdn=auto|ops|kernel} (targets only; default auto): a Gated DeltaNet layer's recurrence as MLX ops per token,
 * or as one CUDA kernel of ours over all tokens ({@link MlxGdnKernel}; CUDA GPU streams only); auto takes the kernel
 * where it can run.
 */
public final class MlxBackend implements MtpBackend {
    public static final String NAME = "mlx";
    private static final Set<String> OPTIONS = Set.of("precision", "device", "moe", "compile", "gdn");

    private static final Set<String> DEVICES = Set.of("auto", "cpu", "gpu");

    private final MlxDiscovery discovery;
    private final String defaultDevice;
    private final String defaultMoe; // MTP_MLX_MOE, or null
    private final String defaultCompile = System.getenv().getOrDefault("MTP_MLX_COMPILE", "off");

    /**
     * Reads the discovery settings, {@code MTP_MLX_DEVICE} and {@code MTP_MLX_MOE} from the environment; does no
     * native work.
     */
    public MlxBackend() {
        this(MlxDiscovery.fromEnvironment(), System.getenv().getOrDefault("MTP_MLX_DEVICE", "auto"),
                System.getenv("MTP_MLX_MOE"));
    }

    public MlxBackend(MlxDiscovery discovery) {
        this(discovery, "auto");
    }

    /** With {@code defaultDevice} ({@code auto}, {@code cpu} or {@code gpu}) for loads that name no device. */
    public MlxBackend(MlxDiscovery discovery, String defaultDevice) {
        this(discovery, defaultDevice, null);
    }

    /** With {@code defaultMoe} ({@code gather}, {@code per-expert}, or null) for loads that name no MoE path. */
    public MlxBackend(MlxDiscovery discovery, String defaultDevice, String defaultMoe) {
        this.discovery = discovery;
        this.defaultDevice = defaultDevice;
        this.defaultMoe = defaultMoe;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String description() {
        return "MLX through mlx-c 0.6 (Panama FFM): Metal on Apple silicon, CPU or CUDA elsewhere";
    }

    @Override
    public Availability availability() {
        try {
            MlxLibrary lib = MlxLibrary.load(discovery);
            StringBuilder env = new StringBuilder();
            for (MlxEnvironment.Setting s : lib.environment()) {
                env.append("; ").append(s.describe());
            }
            String devices = lib.hasGpu() ? "GPU available" : "CPU only";
            return Availability.yes("mlx-c at " + lib.path() + (lib.loadedGlobally() ? " (RTLD_GLOBAL)" : "")
                    + ", MLX " + lib.version() + (lib.versionNote() == null ? "" : " (" + lib.versionNote() + ")")
                    + ", " + devices
                    + ", default device " + (defaultDevice.equals("auto") ? (lib.hasGpu() ? "gpu" : "cpu")
                    : defaultDevice + " (MTP_MLX_DEVICE)") + env + "; options precision=native|f32, "
                    + "device=auto|cpu|gpu, moe=gather|per-expert (MoE layers; default gather), compile=off|on (default "
                    + "off), gdn=auto|ops|kernel (targets; default auto: kernel on CUDA)");
        } catch (MtpException e) {
            return Availability.no(e.getMessage());
        }
    }

    /** Native precision (bf16 activations, as the seed runs) is held to {@code Tolerance.BF16}, f32 to F32. */
    @Override
    public List<BackendProfile> profiles() {
        return List.of(new BackendProfile("mlx/native", Map.of("precision", "native"), Tolerance.BF16),
                new BackendProfile("mlx/f32", Map.of("precision", "f32"), Tolerance.F32));
    }

    @Override
    public MlxDraftModel load(MtpModel model, Map<String, String> options) {
        Settings o = settings(options);
        MlxMoe.Path path = model.weights().mlp() instanceof MlpWeights.Moe m
                ? MlxMoe.choose(m, o.moe(), o.gpu() && o.lib().hasCuda(), o.lib().version()) : null;
        return new MlxDraftModel(model, o.lib(), o.gpu(), o.precision(), path, o.compile());
    }

    /** The hybrid target runs on MLX too (spec §13). */
    @Override
    public boolean supportsTarget() {
        return true;
    }

    /**
     * Loads a hybrid target with the drafter's options: {@code precision}, {@code device}, {@code moe} (each MoE
     * layer's path, as {@link #load}), {@code compile} (dense Gated DeltaNet layers through {@code mlx_compile}) and
     * {@code gdn} (the recurrence as ops or as {@link MlxGdnKernel}; null: the kernel where it can run).
     */
    @Override
    public MlxTarget loadTarget(TargetModel model, Map<String, String> options) {
        Settings o = settings(options);
        return new MlxTarget(model, o.lib(), o.gpu(), o.precision(), o.moe(), o.compile(), o.gdn());
    }

    /** A load's options, read and checked. */
    private record Settings(MlxLibrary lib, boolean gpu, MlxDraftModel.Precision precision, MlxMoe.Path moe,
                            boolean compile, Boolean gdn) {
    }

    private Settings settings(Map<String, String> options) {
        for (String key : options.keySet()) {
            if (!OPTIONS.contains(key)) {
                throw MtpException.invalidArgument("mlx: unknown option '" + key
                        + "' (known: precision, device, moe, compile, gdn)");
            }
        }
        MlxDraftModel.Precision precision = switch (options.getOrDefault("precision", "native")) {
            case "native" -> MlxDraftModel.Precision.NATIVE;
            case "f32" -> MlxDraftModel.Precision.F32;
            default -> throw MtpException.invalidArgument("mlx: precision = '" + options.get("precision")
                    + "', expected native or f32");
        };
        MlxMoe.Path moe;
        try {
            String m = options.getOrDefault("moe", defaultMoe);
            moe = m == null ? null : MlxMoe.Path.named(m);
        } catch (MtpException e) {
            throw options.containsKey("moe") ? e : MtpException.invalidArgument(e.getMessage() + " (from MTP_MLX_MOE)");
        }
        String compileText = options.getOrDefault("compile", defaultCompile);
        boolean compile = switch (compileText) {
            case "on" -> true;
            case "off" -> false;
            default -> throw MtpException.invalidArgument("mlx: compile = '" + compileText + "'"
                    + (options.containsKey("compile") ? "" : " (from MTP_MLX_COMPILE)") + ", expected off or on");
        };
        Boolean gdn = switch (options.getOrDefault("gdn", "auto")) {
            case "auto" -> null;
            case "ops" -> false;
            case "kernel" -> true;
            default -> throw MtpException.invalidArgument("mlx: gdn = '" + options.get("gdn")
                    + "', expected auto, ops or kernel");
        };
        String device = options.getOrDefault("device", defaultDevice);
        if (!DEVICES.contains(device)) {
            throw MtpException.invalidArgument("mlx: device = '" + device + "'" + (options.containsKey("device") ? ""
                    : " (from MTP_MLX_DEVICE)") + ", expected auto, cpu or gpu");
        }
        MlxLibrary lib = MlxLibrary.load(discovery);
        boolean gpu = switch (device) {
            case "cpu" -> false;
            case "gpu" -> {
                if (!lib.hasGpu()) {
                    throw new MtpException(MtpException.Kind.UNAVAILABLE, "mlx: device=gpu but " + lib.path()
                            + " has neither Metal nor CUDA; use device=cpu or device=auto");
                }
                yield true;
            }
            default -> lib.hasGpu();
        };
        return new Settings(lib, gpu, precision, moe, compile, gdn);
    }
}

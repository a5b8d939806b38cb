package org.mtporacle.mlx.ffi;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BOOLEAN;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Raw downcalls into mlx-c 0.6 ({@code mlx/c/*.h}): one method per C function this backend uses, with the C name,
 * the C argument order and the C {@code int} status. Handles ({@code mlx_array}, {@code mlx_stream},
 * {@code mlx_vector_array}, {@code mlx_string}) are one-field structs {@code { void* ctx; }} passed by value as
 * segments of {@link #HANDLE}; optional arguments are {@link #OPTIONAL_INT} / {@link #OPTIONAL_FLOAT} structs. No
 * logic and no validation here: callers ({@code …mlx.handle}) validate every value first.
 */
public final class MlxC {
    /** {@code typedef struct { void* ctx; } mlx_array;} and the other handle types. */
    public static final StructLayout HANDLE = MemoryLayout.structLayout(ADDRESS.withName("ctx"));
    /** {@code typedef struct { int value; bool has_value; } mlx_optional_int;} */
    public static final StructLayout OPTIONAL_INT = MemoryLayout.structLayout(JAVA_INT.withName("value"),
            JAVA_BOOLEAN.withName("has_value"), MemoryLayout.paddingLayout(3));
    /** {@code typedef struct { float value; bool has_value; } mlx_optional_float;} */
    public static final StructLayout OPTIONAL_FLOAT = MemoryLayout.structLayout(JAVA_FLOAT.withName("value"),
            JAVA_BOOLEAN.withName("has_value"), MemoryLayout.paddingLayout(3));
    /** {@code typedef void (*mlx_error_handler_func)(const char* msg, void* data);} */
    public static final FunctionDescriptor ERROR_HANDLER = FunctionDescriptor.ofVoid(ADDRESS, ADDRESS);

    // mlx_dtype (array.h)
    public static final int MLX_BOOL = 0;
    public static final int MLX_UINT32 = 3;
    public static final int MLX_INT32 = 7;
    public static final int MLX_FLOAT16 = 9;
    public static final int MLX_FLOAT32 = 10;
    public static final int MLX_BFLOAT16 = 12;

    private final Linker linker = Linker.nativeLinker();
    private final SymbolLookup lookup;

    // version.h, string.h, error.h, memory.h, metal.h, cuda.h
    private final MethodHandle mlxVersion;
    private final MethodHandle mlxStringNew;
    private final MethodHandle mlxStringData;
    private final MethodHandle mlxStringFree;
    private final MethodHandle mlxSetErrorHandler;
    private final MethodHandle mlxGetActiveMemory;
    private final MethodHandle mlxMetalIsAvailable;
    private final MethodHandle mlxCudaIsAvailable;
    private final MethodHandle mlxArrayIsAvailable; // internal API (leading underscore), null when absent
    // stream.h
    private final MethodHandle mlxDefaultCpuStreamNew;
    private final MethodHandle mlxDefaultGpuStreamNew;
    private final MethodHandle mlxStreamFree;
    private final MethodHandle mlxSynchronize;
    // vector.h
    private final MethodHandle mlxVectorArrayNew;
    private final MethodHandle mlxVectorArrayAppendValue;
    private final MethodHandle mlxVectorArrayFree;
    private final MethodHandle mlxVectorArraySize;
    private final MethodHandle mlxVectorArraySet;
    private final MethodHandle mlxVectorArrayGet;
    // closure.h, compile.h
    private final MethodHandle mlxClosureNew;
    private final MethodHandle mlxClosureNewFunc;
    private final MethodHandle mlxClosureFree;
    private final MethodHandle mlxClosureApply;
    private final MethodHandle mlxCompile;
    // array.h
    private final MethodHandle mlxArrayNew;
    private final MethodHandle mlxArrayNewData;
    private final MethodHandle mlxArrayFree;
    private final MethodHandle mlxArrayEval;
    private final MethodHandle mlxEval;
    private final MethodHandle mlxAsyncEval;
    private final MethodHandle mlxArrayNdim;
    private final MethodHandle mlxArrayShape;
    private final MethodHandle mlxArrayDtype;
    private final MethodHandle mlxArraySize;
    private final MethodHandle mlxArrayDataFloat32;
    private final MethodHandle mlxArrayStrides;
    private final MethodHandle mlxArrayDataUint32;
    private final MethodHandle mlxArrayDataInt32;
    // ops.h
    private final MethodHandle mlxAdd;
    private final MethodHandle mlxSubtract;
    private final MethodHandle mlxMultiply;
    private final MethodHandle mlxDivide;
    private final MethodHandle mlxMatmul;
    private final MethodHandle mlxQuantizedMatmul;
    private final MethodHandle mlxDequantize;
    private final MethodHandle mlxGatherMm;
    private final MethodHandle mlxGatherQmm;
    private final MethodHandle mlxSigmoid;
    private final MethodHandle mlxReshape;
    private final MethodHandle mlxTransposeAxes;
    private final MethodHandle mlxSlice;
    private final MethodHandle mlxSliceUpdate;
    private final MethodHandle mlxConcatenateAxis;
    private final MethodHandle mlxStack;
    private final MethodHandle mlxTakeAxis;
    private final MethodHandle mlxAstype;
    private final MethodHandle mlxContiguous;
    private final MethodHandle mlxZeros;
    private final MethodHandle mlxArange;
    private final MethodHandle mlxLogsumexpAxis;
    private final MethodHandle mlxArgmaxAxis;
    private final MethodHandle mlxMaxAxis;
    private final MethodHandle mlxSumAxis;
    private final MethodHandle mlxArgsortAxis;
    private final MethodHandle mlxTakeAlongAxis;
    private final MethodHandle mlxCumsum;
    private final MethodHandle mlxExp;
    private final MethodHandle mlxLog1p;
    private final MethodHandle mlxNegative;
    private final MethodHandle mlxIsinf;
    private final MethodHandle mlxEqual;
    private final MethodHandle mlxGreater;
    private final MethodHandle mlxLess;
    private final MethodHandle mlxLogicalAnd;
    private final MethodHandle mlxLogicalNot;
    private final MethodHandle mlxWhere;
    // random.h
    private final MethodHandle mlxRandomUniform;
    // fast.h
    private final MethodHandle mlxFastRmsNorm;
    private final MethodHandle mlxFastScaledDotProductAttention;
    // fast.h, CUDA custom kernels (null when the library lacks them); vector.h strings for their names
    private final MethodHandle mlxVectorStringNew;
    private final MethodHandle mlxVectorStringAppendValue;
    private final MethodHandle mlxVectorStringFree;
    private final MethodHandle mlxFastCudaKernelNew;
    private final MethodHandle mlxFastCudaKernelFree;
    private final MethodHandle mlxFastCudaKernelApply;
    private final MethodHandle mlxFastCudaKernelConfigNew;
    private final MethodHandle mlxFastCudaKernelConfigFree;
    private final MethodHandle mlxFastCudaKernelConfigAddOutputArg;
    private final MethodHandle mlxFastCudaKernelConfigSetGrid;
    private final MethodHandle mlxFastCudaKernelConfigSetThreadGroup;
    private final MethodHandle mlxFastCudaKernelConfigAddTemplateArgInt;
    private final MethodHandle mlxFastCudaKernelConfigAddTemplateArgBool;

    /** Binds every function from {@code lookup}; fails with {@link java.util.NoSuchElementException} naming a missing symbol. */
    public MlxC(SymbolLookup lookup) {
        this.lookup = lookup;
        mlxVersion = h("mlx_version", JAVA_INT, ADDRESS);
        mlxStringNew = h("mlx_string_new", HANDLE);
        mlxStringData = h("mlx_string_data", ADDRESS, HANDLE);
        mlxStringFree = h("mlx_string_free", JAVA_INT, HANDLE);
        mlxSetErrorHandler = linker.downcallHandle(find("mlx_set_error_handler"),
                FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
        mlxGetActiveMemory = h("mlx_get_active_memory", JAVA_INT, ADDRESS);
        mlxMetalIsAvailable = h("mlx_metal_is_available", JAVA_INT, ADDRESS);
        mlxCudaIsAvailable = lookup.find("mlx_cuda_is_available").isPresent()
                ? h("mlx_cuda_is_available", JAVA_INT, ADDRESS) : null;
        mlxDefaultCpuStreamNew = h("mlx_default_cpu_stream_new", HANDLE);
        mlxDefaultGpuStreamNew = h("mlx_default_gpu_stream_new", HANDLE);
        mlxStreamFree = h("mlx_stream_free", JAVA_INT, HANDLE);
        mlxSynchronize = h("mlx_synchronize", JAVA_INT, HANDLE);
        mlxVectorArrayNew = h("mlx_vector_array_new", HANDLE);
        mlxVectorArrayAppendValue = h("mlx_vector_array_append_value", JAVA_INT, HANDLE, HANDLE);
        mlxVectorArrayFree = h("mlx_vector_array_free", JAVA_INT, HANDLE);
        mlxVectorArraySize = h("mlx_vector_array_size", JAVA_LONG, HANDLE);
        mlxVectorArraySet = h("mlx_vector_array_set", JAVA_INT, ADDRESS, HANDLE);
        mlxVectorArrayGet = h("mlx_vector_array_get", JAVA_INT, ADDRESS, HANDLE, JAVA_LONG);
        mlxClosureNew = h("mlx_closure_new", HANDLE);
        mlxClosureNewFunc = h("mlx_closure_new_func", HANDLE, ADDRESS);
        mlxClosureFree = h("mlx_closure_free", JAVA_INT, HANDLE);
        mlxClosureApply = h("mlx_closure_apply", JAVA_INT, ADDRESS, HANDLE, HANDLE);
        mlxCompile = h("mlx_compile", JAVA_INT, ADDRESS, HANDLE, JAVA_BOOLEAN);
        mlxArrayNew = h("mlx_array_new", HANDLE);
        mlxArrayNewData = h("mlx_array_new_data", HANDLE, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT);
        mlxArrayFree = h("mlx_array_free", JAVA_INT, HANDLE);
        mlxArrayEval = h("mlx_array_eval", JAVA_INT, HANDLE);
        mlxEval = h("mlx_eval", JAVA_INT, HANDLE);
        mlxAsyncEval = h("mlx_async_eval", JAVA_INT, HANDLE);
        mlxArrayIsAvailable = lookup.find("_mlx_array_is_available").isPresent()
                ? h("_mlx_array_is_available", JAVA_INT, ADDRESS, HANDLE) : null;
        mlxArrayNdim = h("mlx_array_ndim", JAVA_LONG, HANDLE);
        mlxArrayShape = h("mlx_array_shape", ADDRESS, HANDLE);
        mlxArrayStrides = h("mlx_array_strides", ADDRESS, HANDLE);
        mlxArrayDtype = h("mlx_array_dtype", JAVA_INT, HANDLE);
        mlxArraySize = h("mlx_array_size", JAVA_LONG, HANDLE);
        mlxArrayDataFloat32 = h("mlx_array_data_float32", ADDRESS, HANDLE);
        mlxArrayDataUint32 = h("mlx_array_data_uint32", ADDRESS, HANDLE);
        mlxArrayDataInt32 = h("mlx_array_data_int32", ADDRESS, HANDLE);
        mlxAdd = h("mlx_add", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxSubtract = h("mlx_subtract", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxMultiply = h("mlx_multiply", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxDivide = h("mlx_divide", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxMatmul = h("mlx_matmul", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxQuantizedMatmul = h("mlx_quantized_matmul", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE, HANDLE,
                JAVA_BOOLEAN, OPTIONAL_INT, OPTIONAL_INT, ADDRESS, HANDLE);
        mlxDequantize = h("mlx_dequantize", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE, OPTIONAL_INT, OPTIONAL_INT,
                ADDRESS, HANDLE, OPTIONAL_INT, HANDLE);
        mlxGatherMm = h("mlx_gather_mm", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE, HANDLE, JAVA_BOOLEAN, HANDLE);
        mlxGatherQmm = h("mlx_gather_qmm", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE, HANDLE, HANDLE, HANDLE,
                JAVA_BOOLEAN, OPTIONAL_INT, OPTIONAL_INT, ADDRESS, JAVA_BOOLEAN, HANDLE);
        mlxSigmoid = h("mlx_sigmoid", JAVA_INT, ADDRESS, HANDLE, HANDLE);
        mlxReshape = h("mlx_reshape", JAVA_INT, ADDRESS, HANDLE, ADDRESS, JAVA_LONG, HANDLE);
        mlxTransposeAxes = h("mlx_transpose_axes", JAVA_INT, ADDRESS, HANDLE, ADDRESS, JAVA_LONG, HANDLE);
        mlxSlice = h("mlx_slice", JAVA_INT, ADDRESS, HANDLE, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS,
                JAVA_LONG, HANDLE);
        mlxSliceUpdate = h("mlx_slice_update", JAVA_INT, ADDRESS, HANDLE, HANDLE, ADDRESS, JAVA_LONG, ADDRESS,
                JAVA_LONG, ADDRESS, JAVA_LONG, HANDLE);
        mlxConcatenateAxis = h("mlx_concatenate_axis", JAVA_INT, ADDRESS, HANDLE, JAVA_INT, HANDLE);
        mlxStack = h("mlx_stack", JAVA_INT, ADDRESS, HANDLE, HANDLE);
        mlxTakeAxis = h("mlx_take_axis", JAVA_INT, ADDRESS, HANDLE, HANDLE, JAVA_INT, HANDLE);
        mlxAstype = h("mlx_astype", JAVA_INT, ADDRESS, HANDLE, JAVA_INT, HANDLE);
        mlxContiguous = h("mlx_contiguous", JAVA_INT, ADDRESS, HANDLE, JAVA_BOOLEAN, HANDLE);
        mlxZeros = h("mlx_zeros", JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, HANDLE);
        mlxArange = h("mlx_arange", JAVA_INT, ADDRESS, JAVA_DOUBLE, JAVA_DOUBLE, JAVA_DOUBLE, JAVA_INT, HANDLE);
        mlxLogsumexpAxis = h("mlx_logsumexp_axis", JAVA_INT, ADDRESS, HANDLE, JAVA_INT, JAVA_BOOLEAN, HANDLE);
        mlxArgmaxAxis = h("mlx_argmax_axis", JAVA_INT, ADDRESS, HANDLE, JAVA_INT, JAVA_BOOLEAN, HANDLE);
        mlxMaxAxis = h("mlx_max_axis", JAVA_INT, ADDRESS, HANDLE, JAVA_INT, JAVA_BOOLEAN, HANDLE);
        mlxSumAxis = h("mlx_sum_axis", JAVA_INT, ADDRESS, HANDLE, JAVA_INT, JAVA_BOOLEAN, HANDLE);
        mlxArgsortAxis = h("mlx_argsort_axis", JAVA_INT, ADDRESS, HANDLE, JAVA_INT, HANDLE);
        mlxTakeAlongAxis = h("mlx_take_along_axis", JAVA_INT, ADDRESS, HANDLE, HANDLE, JAVA_INT, HANDLE);
        mlxCumsum = h("mlx_cumsum", JAVA_INT, ADDRESS, HANDLE, JAVA_INT, JAVA_BOOLEAN, JAVA_BOOLEAN, HANDLE);
        mlxExp = h("mlx_exp", JAVA_INT, ADDRESS, HANDLE, HANDLE);
        mlxLog1p = h("mlx_log1p", JAVA_INT, ADDRESS, HANDLE, HANDLE);
        mlxNegative = h("mlx_negative", JAVA_INT, ADDRESS, HANDLE, HANDLE);
        mlxIsinf = h("mlx_isinf", JAVA_INT, ADDRESS, HANDLE, HANDLE);
        mlxEqual = h("mlx_equal", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxGreater = h("mlx_greater", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxLess = h("mlx_less", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxLogicalAnd = h("mlx_logical_and", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxLogicalNot = h("mlx_logical_not", JAVA_INT, ADDRESS, HANDLE, HANDLE);
        mlxWhere = h("mlx_where", JAVA_INT, ADDRESS, HANDLE, HANDLE, HANDLE, HANDLE);
        mlxRandomUniform = h("mlx_random_uniform", JAVA_INT, ADDRESS, HANDLE, HANDLE, ADDRESS, JAVA_LONG, JAVA_INT,
                HANDLE, HANDLE);
        mlxFastRmsNorm = h("mlx_fast_rms_norm", JAVA_INT, ADDRESS, HANDLE, HANDLE, JAVA_FLOAT, HANDLE);
        mlxFastScaledDotProductAttention = h("mlx_fast_scaled_dot_product_attention", JAVA_INT, ADDRESS, HANDLE,
                HANDLE, HANDLE, JAVA_FLOAT, ADDRESS, HANDLE, HANDLE, HANDLE);
        mlxVectorStringNew = h("mlx_vector_string_new", HANDLE);
        mlxVectorStringAppendValue = h("mlx_vector_string_append_value", JAVA_INT, HANDLE, ADDRESS);
        mlxVectorStringFree = h("mlx_vector_string_free", JAVA_INT, HANDLE);
        boolean cudaKernels = lookup.find("mlx_fast_cuda_kernel_apply").isPresent();
        mlxFastCudaKernelNew = cudaKernels ? h("mlx_fast_cuda_kernel_new", HANDLE, ADDRESS, HANDLE, HANDLE, ADDRESS,
                ADDRESS, JAVA_BOOLEAN, JAVA_INT) : null;
        mlxFastCudaKernelFree = cudaKernels ? linker.downcallHandle(find("mlx_fast_cuda_kernel_free"),
                FunctionDescriptor.ofVoid(HANDLE)) : null;
        mlxFastCudaKernelApply = cudaKernels ? h("mlx_fast_cuda_kernel_apply", JAVA_INT, ADDRESS, HANDLE, HANDLE,
                HANDLE, HANDLE) : null;
        mlxFastCudaKernelConfigNew = cudaKernels ? h("mlx_fast_cuda_kernel_config_new", HANDLE) : null;
        mlxFastCudaKernelConfigFree = cudaKernels ? linker.downcallHandle(find("mlx_fast_cuda_kernel_config_free"),
                FunctionDescriptor.ofVoid(HANDLE)) : null;
        mlxFastCudaKernelConfigAddOutputArg = cudaKernels ? h("mlx_fast_cuda_kernel_config_add_output_arg", JAVA_INT,
                HANDLE, ADDRESS, JAVA_LONG, JAVA_INT) : null;
        mlxFastCudaKernelConfigSetGrid = cudaKernels ? h("mlx_fast_cuda_kernel_config_set_grid", JAVA_INT, HANDLE,
                JAVA_INT, JAVA_INT, JAVA_INT) : null;
        mlxFastCudaKernelConfigSetThreadGroup = cudaKernels ? h("mlx_fast_cuda_kernel_config_set_thread_group",
                JAVA_INT, HANDLE, JAVA_INT, JAVA_INT, JAVA_INT) : null;
        mlxFastCudaKernelConfigAddTemplateArgInt = cudaKernels
                ? h("mlx_fast_cuda_kernel_config_add_template_arg_int", JAVA_INT, HANDLE, ADDRESS, JAVA_INT) : null;
        mlxFastCudaKernelConfigAddTemplateArgBool = cudaKernels
                ? h("mlx_fast_cuda_kernel_config_add_template_arg_bool", JAVA_INT, HANDLE, ADDRESS, JAVA_BOOLEAN)
                : null;
    }

    private MemorySegment find(String name) {
        return lookup.find(name).orElseThrow(() -> new java.util.NoSuchElementException("symbol " + name));
    }

    private MethodHandle h(String name, MemoryLayout result, MemoryLayout... args) {
        return linker.downcallHandle(find(name), FunctionDescriptor.of(result, args));
    }

    /** An upcall stub for {@code mlx_error_handler_func} calling {@code target(MemorySegment msg, MemorySegment data)}. */
    public MemorySegment errorHandlerStub(MethodHandle target, Arena arena) {
        return linker.upcallStub(target, ERROR_HANDLER, arena);
    }

    /** The {@code MethodType} an error handler target must have. */
    public static MethodType errorHandlerType() {
        return MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class);
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    // ---- version.h / string.h / error.h / memory.h / metal.h / cuda.h

    public int mlx_version(MemorySegment str) {
        try { return (int) mlxVersion.invokeExact(str); } catch (Throwable t) { throw rethrow(t); }
    }

    public MemorySegment mlx_string_new(SegmentAllocator a) {
        try { return (MemorySegment) mlxStringNew.invokeExact(a); } catch (Throwable t) { throw rethrow(t); }
    }

    public MemorySegment mlx_string_data(MemorySegment str) {
        try { return (MemorySegment) mlxStringData.invokeExact(str); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_string_free(MemorySegment str) {
        try { return (int) mlxStringFree.invokeExact(str); } catch (Throwable t) { throw rethrow(t); }
    }

    public void mlx_set_error_handler(MemorySegment handler, MemorySegment data, MemorySegment dtor) {
        try { mlxSetErrorHandler.invokeExact(handler, data, dtor); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_get_active_memory(MemorySegment res) {
        try { return (int) mlxGetActiveMemory.invokeExact(res); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_metal_is_available(MemorySegment res) {
        try { return (int) mlxMetalIsAvailable.invokeExact(res); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code mlx_cuda_is_available}, or status 1 when this mlx-c build lacks the symbol. */
    public int mlx_cuda_is_available(MemorySegment res) {
        if (mlxCudaIsAvailable == null) {
            return 1;
        }
        try { return (int) mlxCudaIsAvailable.invokeExact(res); } catch (Throwable t) { throw rethrow(t); }
    }

    // ---- stream.h

    public MemorySegment mlx_default_cpu_stream_new(SegmentAllocator a) {
        try { return (MemorySegment) mlxDefaultCpuStreamNew.invokeExact(a); } catch (Throwable t) { throw rethrow(t); }
    }

    public MemorySegment mlx_default_gpu_stream_new(SegmentAllocator a) {
        try { return (MemorySegment) mlxDefaultGpuStreamNew.invokeExact(a); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_stream_free(MemorySegment stream) {
        try { return (int) mlxStreamFree.invokeExact(stream); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_synchronize(MemorySegment stream) {
        try { return (int) mlxSynchronize.invokeExact(stream); } catch (Throwable t) { throw rethrow(t); }
    }

    // ---- vector.h

    public MemorySegment mlx_vector_array_new(SegmentAllocator a) {
        try { return (MemorySegment) mlxVectorArrayNew.invokeExact(a); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_vector_array_append_value(MemorySegment vec, MemorySegment val) {
        try { return (int) mlxVectorArrayAppendValue.invokeExact(vec, val); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_vector_array_free(MemorySegment vec) {
        try { return (int) mlxVectorArrayFree.invokeExact(vec); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code mlx_vector_array_set(mlx_vector_array* vec, const mlx_vector_array src)}: copies src's arrays into *vec. */
    public int mlx_vector_array_set(MemorySegment vec, MemorySegment src) {
        try { return (int) mlxVectorArraySet.invokeExact(vec, src); } catch (Throwable t) { throw rethrow(t); }
    }

    public long mlx_vector_array_size(MemorySegment vec) {
        try { return (long) mlxVectorArraySize.invokeExact(vec); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code mlx_vector_array_get(mlx_array* res, const mlx_vector_array vec, size_t idx)}. */
    public int mlx_vector_array_get(MemorySegment res, MemorySegment vec, long idx) {
        try { return (int) mlxVectorArrayGet.invokeExact(res, vec, idx); } catch (Throwable t) { throw rethrow(t); }
    }

    // ---- closure.h, compile.h

    /** {@code typedef int (*fun)(mlx_vector_array* res, const mlx_vector_array input)} of {@code mlx_closure_new_func}. */
    public static final FunctionDescriptor CLOSURE_FUNC = FunctionDescriptor.of(JAVA_INT, ADDRESS, HANDLE);

    /** The {@code MethodType} a closure's upcall target must have. */
    public static MethodType closureFuncType() {
        return MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class);
    }

    /** An upcall stub for {@link #CLOSURE_FUNC} calling {@code target(MemorySegment resPtr, MemorySegment input)}. */
    public MemorySegment closureFuncStub(MethodHandle target, Arena arena) {
        return linker.upcallStub(target, CLOSURE_FUNC, arena);
    }

    public MemorySegment mlx_closure_new(SegmentAllocator a) {
        try { return (MemorySegment) mlxClosureNew.invokeExact(a); } catch (Throwable t) { throw rethrow(t); }
    }

    public MemorySegment mlx_closure_new_func(SegmentAllocator a, MemorySegment fun) {
        try { return (MemorySegment) mlxClosureNewFunc.invokeExact(a, fun); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_closure_free(MemorySegment cls) {
        try { return (int) mlxClosureFree.invokeExact(cls); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code mlx_closure_apply(mlx_vector_array* res, mlx_closure cls, const mlx_vector_array input)}. */
    public int mlx_closure_apply(MemorySegment res, MemorySegment cls, MemorySegment input) {
        try { return (int) mlxClosureApply.invokeExact(res, cls, input); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code mlx_compile(mlx_closure* res, const mlx_closure fun, bool shapeless)}. */
    public int mlx_compile(MemorySegment res, MemorySegment fun, boolean shapeless) {
        try { return (int) mlxCompile.invokeExact(res, fun, shapeless); } catch (Throwable t) { throw rethrow(t); }
    }

    // ---- array.h

    public MemorySegment mlx_array_new(SegmentAllocator a) {
        try { return (MemorySegment) mlxArrayNew.invokeExact(a); } catch (Throwable t) { throw rethrow(t); }
    }

    public MemorySegment mlx_array_new_data(SegmentAllocator a, MemorySegment data, MemorySegment shape, int dim,
                                            int dtype) {
        try {
            return (MemorySegment) mlxArrayNewData.invokeExact(a, data, shape, dim, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_array_free(MemorySegment arr) {
        try { return (int) mlxArrayFree.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_array_eval(MemorySegment arr) {
        try { return (int) mlxArrayEval.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    /** Whether this mlx-c exports {@code _mlx_array_is_available} (array.h, mlx-c 0.6). */
    public boolean hasArrayIsAvailable() {
        return mlxArrayIsAvailable != null;
    }

    /** {@code _mlx_array_is_available(bool* res, const mlx_array arr)}: its data is computed and ready to read. */
    public int mlx_array_is_available(MemorySegment res, MemorySegment arr) {
        try { return (int) mlxArrayIsAvailable.invokeExact(res, arr); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code mlx_eval(const mlx_vector_array outputs)} (transforms.h): one evaluation of every output. */
    public int mlx_eval(MemorySegment outputs) {
        try { return (int) mlxEval.invokeExact(outputs); } catch (Throwable t) { throw rethrow(t); }
    }

    /**
     * {@code mlx_async_eval(const mlx_vector_array outputs)} (transforms.h): schedules the evaluation of every output
     * and returns without waiting for the device.
     */
    public int mlx_async_eval(MemorySegment outputs) {
        try { return (int) mlxAsyncEval.invokeExact(outputs); } catch (Throwable t) { throw rethrow(t); }
    }

    public long mlx_array_ndim(MemorySegment arr) {
        try { return (long) mlxArrayNdim.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    public MemorySegment mlx_array_shape(MemorySegment arr) {
        try { return (MemorySegment) mlxArrayShape.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code const size_t* mlx_array_strides(const mlx_array arr)}: element strides, one per dimension. */
    public MemorySegment mlx_array_strides(MemorySegment arr) {
        try { return (MemorySegment) mlxArrayStrides.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_array_dtype(MemorySegment arr) {
        try { return (int) mlxArrayDtype.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    public long mlx_array_size(MemorySegment arr) {
        try { return (long) mlxArraySize.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    public MemorySegment mlx_array_data_float32(MemorySegment arr) {
        try { return (MemorySegment) mlxArrayDataFloat32.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    public MemorySegment mlx_array_data_uint32(MemorySegment arr) {
        try { return (MemorySegment) mlxArrayDataUint32.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    public MemorySegment mlx_array_data_int32(MemorySegment arr) {
        try { return (MemorySegment) mlxArrayDataInt32.invokeExact(arr); } catch (Throwable t) { throw rethrow(t); }
    }

    // ---- ops.h

    public int mlx_add(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try { return (int) mlxAdd.invokeExact(res, a, b, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_subtract(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try { return (int) mlxSubtract.invokeExact(res, a, b, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_multiply(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try { return (int) mlxMultiply.invokeExact(res, a, b, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_divide(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try { return (int) mlxDivide.invokeExact(res, a, b, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_matmul(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try { return (int) mlxMatmul.invokeExact(res, a, b, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_quantized_matmul(MemorySegment res, MemorySegment x, MemorySegment w, MemorySegment scales,
                                    MemorySegment biases, boolean transpose, MemorySegment groupSize,
                                    MemorySegment bits, MemorySegment mode, MemorySegment s) {
        try {
            return (int) mlxQuantizedMatmul.invokeExact(res, x, w, scales, biases, transpose, groupSize, bits, mode,
                    s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_dequantize(MemorySegment res, MemorySegment w, MemorySegment scales, MemorySegment biases,
                              MemorySegment groupSize, MemorySegment bits, MemorySegment mode,
                              MemorySegment globalScale, MemorySegment dtype, MemorySegment s) {
        try {
            return (int) mlxDequantize.invokeExact(res, w, scales, biases, groupSize, bits, mode, globalScale, dtype,
                    s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code mlx_gather_mm(res, a, b, lhs_indices, rhs_indices, sorted_indices, s)}; null indices are null handles. */
    public int mlx_gather_mm(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment lhsIndices,
                             MemorySegment rhsIndices, boolean sortedIndices, MemorySegment s) {
        try {
            return (int) mlxGatherMm.invokeExact(res, a, b, lhsIndices, rhsIndices, sortedIndices, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code mlx_gather_qmm(res, x, w, scales, biases, lhs_indices, rhs_indices, transpose, group_size, bits, mode,
     * sorted_indices, s)}; null biases and indices are null handles.
     */
    public int mlx_gather_qmm(MemorySegment res, MemorySegment x, MemorySegment w, MemorySegment scales,
                              MemorySegment biases, MemorySegment lhsIndices, MemorySegment rhsIndices,
                              boolean transpose, MemorySegment groupSize, MemorySegment bits, MemorySegment mode,
                              boolean sortedIndices, MemorySegment s) {
        try {
            return (int) mlxGatherQmm.invokeExact(res, x, w, scales, biases, lhsIndices, rhsIndices, transpose,
                    groupSize, bits, mode, sortedIndices, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_sigmoid(MemorySegment res, MemorySegment a, MemorySegment s) {
        try { return (int) mlxSigmoid.invokeExact(res, a, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_reshape(MemorySegment res, MemorySegment a, MemorySegment shape, long shapeNum, MemorySegment s) {
        try { return (int) mlxReshape.invokeExact(res, a, shape, shapeNum, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_transpose_axes(MemorySegment res, MemorySegment a, MemorySegment axes, long axesNum,
                                  MemorySegment s) {
        try { return (int) mlxTransposeAxes.invokeExact(res, a, axes, axesNum, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_slice(MemorySegment res, MemorySegment a, MemorySegment start, long startNum, MemorySegment stop,
                         long stopNum, MemorySegment strides, long stridesNum, MemorySegment s) {
        try {
            return (int) mlxSlice.invokeExact(res, a, start, startNum, stop, stopNum, strides, stridesNum, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_slice_update(MemorySegment res, MemorySegment src, MemorySegment update, MemorySegment start,
                                long startNum, MemorySegment stop, long stopNum, MemorySegment strides,
                                long stridesNum, MemorySegment s) {
        try {
            return (int) mlxSliceUpdate.invokeExact(res, src, update, start, startNum, stop, stopNum, strides,
                    stridesNum, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_concatenate_axis(MemorySegment res, MemorySegment arrays, int axis, MemorySegment s) {
        try { return (int) mlxConcatenateAxis.invokeExact(res, arrays, axis, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_stack(MemorySegment res, MemorySegment arrays, MemorySegment s) {
        try { return (int) mlxStack.invokeExact(res, arrays, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_take_axis(MemorySegment res, MemorySegment a, MemorySegment indices, int axis, MemorySegment s) {
        try { return (int) mlxTakeAxis.invokeExact(res, a, indices, axis, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_astype(MemorySegment res, MemorySegment a, int dtype, MemorySegment s) {
        try { return (int) mlxAstype.invokeExact(res, a, dtype, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_contiguous(MemorySegment res, MemorySegment a, boolean allowColMajor, MemorySegment s) {
        try { return (int) mlxContiguous.invokeExact(res, a, allowColMajor, s); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code mlx_arange(res, start, stop, step, dtype, s)}: {@code start, start + step, …} below {@code stop}. */
    public int mlx_arange(MemorySegment res, double start, double stop, double step, int dtype, MemorySegment s) {
        try { return (int) mlxArange.invokeExact(res, start, stop, step, dtype, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_zeros(MemorySegment res, MemorySegment shape, long shapeNum, int dtype, MemorySegment s) {
        try { return (int) mlxZeros.invokeExact(res, shape, shapeNum, dtype, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_logsumexp_axis(MemorySegment res, MemorySegment a, int axis, boolean keepdims, MemorySegment s) {
        try { return (int) mlxLogsumexpAxis.invokeExact(res, a, axis, keepdims, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_argmax_axis(MemorySegment res, MemorySegment a, int axis, boolean keepdims, MemorySegment s) {
        try { return (int) mlxArgmaxAxis.invokeExact(res, a, axis, keepdims, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_max_axis(MemorySegment res, MemorySegment a, int axis, boolean keepdims, MemorySegment s) {
        try { return (int) mlxMaxAxis.invokeExact(res, a, axis, keepdims, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_sum_axis(MemorySegment res, MemorySegment a, int axis, boolean keepdims, MemorySegment s) {
        try { return (int) mlxSumAxis.invokeExact(res, a, axis, keepdims, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_argsort_axis(MemorySegment res, MemorySegment a, int axis, MemorySegment s) {
        try { return (int) mlxArgsortAxis.invokeExact(res, a, axis, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_take_along_axis(MemorySegment res, MemorySegment a, MemorySegment indices, int axis,
                                   MemorySegment s) {
        try { return (int) mlxTakeAlongAxis.invokeExact(res, a, indices, axis, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_cumsum(MemorySegment res, MemorySegment a, int axis, boolean reverse, boolean inclusive,
                          MemorySegment s) {
        try { return (int) mlxCumsum.invokeExact(res, a, axis, reverse, inclusive, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_exp(MemorySegment res, MemorySegment a, MemorySegment s) {
        try { return (int) mlxExp.invokeExact(res, a, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_log1p(MemorySegment res, MemorySegment a, MemorySegment s) {
        try { return (int) mlxLog1p.invokeExact(res, a, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_negative(MemorySegment res, MemorySegment a, MemorySegment s) {
        try { return (int) mlxNegative.invokeExact(res, a, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_isinf(MemorySegment res, MemorySegment a, MemorySegment s) {
        try { return (int) mlxIsinf.invokeExact(res, a, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_equal(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try { return (int) mlxEqual.invokeExact(res, a, b, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_greater(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try { return (int) mlxGreater.invokeExact(res, a, b, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_less(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try { return (int) mlxLess.invokeExact(res, a, b, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_logical_and(MemorySegment res, MemorySegment a, MemorySegment b, MemorySegment s) {
        try { return (int) mlxLogicalAnd.invokeExact(res, a, b, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_logical_not(MemorySegment res, MemorySegment a, MemorySegment s) {
        try { return (int) mlxLogicalNot.invokeExact(res, a, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_where(MemorySegment res, MemorySegment condition, MemorySegment x, MemorySegment y,
                         MemorySegment s) {
        try { return (int) mlxWhere.invokeExact(res, condition, x, y, s); } catch (Throwable t) { throw rethrow(t); }
    }

    // ---- random.h

    public int mlx_random_uniform(MemorySegment res, MemorySegment low, MemorySegment high, MemorySegment shape,
                                  long shapeNum, int dtype, MemorySegment key, MemorySegment s) {
        try {
            return (int) mlxRandomUniform.invokeExact(res, low, high, shape, shapeNum, dtype, key, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- fast.h

    public int mlx_fast_rms_norm(MemorySegment res, MemorySegment x, MemorySegment weight, float eps,
                                 MemorySegment s) {
        try { return (int) mlxFastRmsNorm.invokeExact(res, x, weight, eps, s); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_fast_scaled_dot_product_attention(MemorySegment res, MemorySegment queries, MemorySegment keys,
                                                     MemorySegment values, float scale, MemorySegment maskMode,
                                                     MemorySegment maskArr, MemorySegment sinks, MemorySegment s) {
        try {
            return (int) mlxFastScaledDotProductAttention.invokeExact(res, queries, keys, values, scale, maskMode,
                    maskArr, sinks, s);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- vector.h (strings), fast.h (CUDA custom kernels: mlx-c 0.6)

    public MemorySegment mlx_vector_string_new(SegmentAllocator a) {
        try { return (MemorySegment) mlxVectorStringNew.invokeExact(a); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code mlx_vector_string_append_value(mlx_vector_string vec, const char* val)}. */
    public int mlx_vector_string_append_value(MemorySegment vec, MemorySegment val) {
        try { return (int) mlxVectorStringAppendValue.invokeExact(vec, val); } catch (Throwable t) { throw rethrow(t); }
    }

    public int mlx_vector_string_free(MemorySegment vec) {
        try { return (int) mlxVectorStringFree.invokeExact(vec); } catch (Throwable t) { throw rethrow(t); }
    }

    /** Whether this mlx-c exports {@code mlx_fast_cuda_kernel_*} (mlx-c 0.6 does, in CPU builds too). */
    public boolean hasCudaKernels() {
        return mlxFastCudaKernelApply != null;
    }

    /**
     * {@code mlx_fast_cuda_kernel mlx_fast_cuda_kernel_new(const char* name, const mlx_vector_string input_names,
     * const mlx_vector_string output_names, const char* source, const char* header, bool ensure_row_contiguous,
     * int shared_memory)}; a null {@code ctx} on failure (MLX without CUDA says so through the error handler).
     */
    public MemorySegment mlx_fast_cuda_kernel_new(SegmentAllocator a, MemorySegment name, MemorySegment inputNames,
                                                  MemorySegment outputNames, MemorySegment source,
                                                  MemorySegment header, boolean ensureRowContiguous,
                                                  int sharedMemory) {
        try {
            return (MemorySegment) mlxFastCudaKernelNew.invokeExact(a, name, inputNames, outputNames, source, header,
                    ensureRowContiguous, sharedMemory);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void mlx_fast_cuda_kernel_free(MemorySegment kernel) {
        try { mlxFastCudaKernelFree.invokeExact(kernel); } catch (Throwable t) { throw rethrow(t); }
    }

    /**
     * {@code mlx_fast_cuda_kernel_apply(mlx_vector_array* outputs, mlx_fast_cuda_kernel cls, const mlx_vector_array
     * inputs, const mlx_fast_cuda_kernel_config config, const mlx_stream stream)}.
     */
    public int mlx_fast_cuda_kernel_apply(MemorySegment outputs, MemorySegment kernel, MemorySegment inputs,
                                          MemorySegment config, MemorySegment stream) {
        try {
            return (int) mlxFastCudaKernelApply.invokeExact(outputs, kernel, inputs, config, stream);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public MemorySegment mlx_fast_cuda_kernel_config_new(SegmentAllocator a) {
        try {
            return (MemorySegment) mlxFastCudaKernelConfigNew.invokeExact(a);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public void mlx_fast_cuda_kernel_config_free(MemorySegment config) {
        try { mlxFastCudaKernelConfigFree.invokeExact(config); } catch (Throwable t) { throw rethrow(t); }
    }

    /** {@code (config, const int* shape, size_t size, mlx_dtype dtype)}. */
    public int mlx_fast_cuda_kernel_config_add_output_arg(MemorySegment config, MemorySegment shape, long size,
                                                          int dtype) {
        try {
            return (int) mlxFastCudaKernelConfigAddOutputArg.invokeExact(config, shape, size, dtype);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Total threads per axis (MLX launches ceil(grid / thread group) blocks). */
    public int mlx_fast_cuda_kernel_config_set_grid(MemorySegment config, int x, int y, int z) {
        try {
            return (int) mlxFastCudaKernelConfigSetGrid.invokeExact(config, x, y, z);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_cuda_kernel_config_set_thread_group(MemorySegment config, int x, int y, int z) {
        try {
            return (int) mlxFastCudaKernelConfigSetThreadGroup.invokeExact(config, x, y, z);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_cuda_kernel_config_add_template_arg_int(MemorySegment config, MemorySegment name, int value) {
        try {
            return (int) mlxFastCudaKernelConfigAddTemplateArgInt.invokeExact(config, name, value);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    public int mlx_fast_cuda_kernel_config_add_template_arg_bool(MemorySegment config, MemorySegment name,
                                                                 boolean value) {
        try {
            return (int) mlxFastCudaKernelConfigAddTemplateArgBool.invokeExact(config, name, value);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}

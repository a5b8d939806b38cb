/**
 * Model I/O: safetensors read (memory-mapped, zero-copy, strictly validated) and write, sharded stores,
 * {@code config.json}, MLX affine quantization, norm folding, model loading and inspection (spec §1.2, §1.3, §1.6, §2,
 * §6, §11.4, §11.5, §11.9).
 *
 * <p><b>Layouts.</b> A raw Hugging Face checkpoint keeps the MTP tensors under {@code mtp.}, zero-centred norms
 * ({@code gain = 1 + w}, folded once in f32 on load), the target's {@code model.language_model.embed_tokens.weight}
 * (or {@code model.embed_tokens.weight}) and {@code lm_head.weight} unless {@code tie_word_embeddings}. A companion
 * directory ({@code config.json} {@code model_type} {@code qwen3_5_mtp}) holds the MTP tensors without prefix and with
 * full gains.
 *
 * <p><b>Companion target-head convention.</b> A companion carries no vocabulary, so the target's head is supplied
 * beside it, in this order of preference:
 * <ol>
 *   <li>{@code target_head.safetensors} in the companion directory, holding {@code embed_tokens.weight} and, when the
 *   target is untied, {@code lm_head.weight} (each optionally MLX-quantized as {@code .weight}/{@code .scales}/
 *   {@code .biases}, specs from the companion's {@code quantization} block under module paths {@code embed_tokens} and
 *   {@code lm_head}); no {@code lm_head.weight} means tied;</li>
 *   <li>a {@code target/} subdirectory holding the target model's safetensors (sharded or not; its own
 *   {@code config.json} optional, used for {@code tie_word_embeddings} and quantization), in which the embedding is
 *   found as {@code model.language_model.embed_tokens.weight}, {@code model.embed_tokens.weight},
 *   {@code language_model.model.embed_tokens.weight} or {@code embed_tokens.weight}.</li>
 * </ol>
 * The identity (spec §6) hashes these files too, named {@code target_head.safetensors} or {@code target/<file>}.
 */
package org.mtporacle.io;

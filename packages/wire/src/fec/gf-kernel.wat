;; GF(256) matrix-times-chunks kernel (WebAssembly SIMD, split-nibble method).
;;
;; Assembled by packages/wire/scripts/build-kernel.ts into gf-kernel.generated.ts; edit this file, then run
;; `npx tsx packages/wire/scripts/build-kernel.ts`.
;;
;; Linear memory layout (the host writes everything but dst):
;;   [0, 8192)  nibble product tables, 32 bytes per coefficient c at address c * 32:
;;              bytes 0..15 hold c * n and bytes 16..31 hold c * (n << 4), for n = 0..15.
;;   coef       rows x cols coefficient bytes, column-major: coefficient (r, i) at coef + i * rows + r.
;;   src        cols input slots of `stride` bytes each (stride is a multiple of 16).
;;   dst        rows output slots of `stride` bytes each.
;;
;; mul requires rows >= 1 and cols >= 1. It computes dst[r] = XOR over i of coef(r, i) * src[i] for every byte of every slot. Since c * v equals
;; c * (v & 15) XOR c * (v & 240), each product is two i8x16.swizzle table look-ups and one XOR.
(module
  (memory (export "memory") 1)

  (func (export "mul")
    (param $rows i32) (param $cols i32) (param $stride i32) (param $src i32) (param $dst i32) (param $coef i32)
    (local $x i32) (local $j i32) (local $n i32) (local $p i32) (local $c i32) (local $t i32) (local $q i32)
    (local $v v128) (local $lo v128) (local $hi v128) (local $mask v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $mask (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
    (block $blocks_done
      (loop $blocks
        (br_if $blocks_done (i32.ge_u (local.get $x) (local.get $stride)))
        (local.set $j (i32.const 0))
        ;; Four output rows at a time: each input vector is loaded and split once for four products.
        (block $quads_done
          (loop $quads
            (br_if $quads_done (i32.gt_u (i32.add (local.get $j) (i32.const 4)) (local.get $rows)))
            (local.set $a0 (v128.const i64x2 0 0))
            (local.set $a1 (v128.const i64x2 0 0))
            (local.set $a2 (v128.const i64x2 0 0))
            (local.set $a3 (v128.const i64x2 0 0))
            (local.set $p (i32.add (local.get $src) (local.get $x)))
            (local.set $c (i32.add (local.get $coef) (local.get $j)))
            (local.set $n (local.get $cols))
            (loop $quad_cols
              (local.set $v (v128.load (local.get $p)))
              (local.set $lo (v128.and (local.get $v) (local.get $mask)))
              (local.set $hi (i8x16.shr_u (local.get $v) (i32.const 4)))
              (local.set $t (i32.shl (i32.load8_u (local.get $c)) (i32.const 5)))
              (local.set $a0 (v128.xor (local.get $a0) (v128.xor
                (i8x16.swizzle (v128.load (local.get $t)) (local.get $lo))
                (i8x16.swizzle (v128.load offset=16 (local.get $t)) (local.get $hi)))))
              (local.set $t (i32.shl (i32.load8_u offset=1 (local.get $c)) (i32.const 5)))
              (local.set $a1 (v128.xor (local.get $a1) (v128.xor
                (i8x16.swizzle (v128.load (local.get $t)) (local.get $lo))
                (i8x16.swizzle (v128.load offset=16 (local.get $t)) (local.get $hi)))))
              (local.set $t (i32.shl (i32.load8_u offset=2 (local.get $c)) (i32.const 5)))
              (local.set $a2 (v128.xor (local.get $a2) (v128.xor
                (i8x16.swizzle (v128.load (local.get $t)) (local.get $lo))
                (i8x16.swizzle (v128.load offset=16 (local.get $t)) (local.get $hi)))))
              (local.set $t (i32.shl (i32.load8_u offset=3 (local.get $c)) (i32.const 5)))
              (local.set $a3 (v128.xor (local.get $a3) (v128.xor
                (i8x16.swizzle (v128.load (local.get $t)) (local.get $lo))
                (i8x16.swizzle (v128.load offset=16 (local.get $t)) (local.get $hi)))))
              (local.set $p (i32.add (local.get $p) (local.get $stride)))
              (local.set $c (i32.add (local.get $c) (local.get $rows)))
              (br_if $quad_cols (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
            (local.set $q (i32.add (local.get $dst) (i32.add (i32.mul (local.get $j) (local.get $stride)) (local.get $x))))
            (v128.store (local.get $q) (local.get $a0))
            (local.set $q (i32.add (local.get $q) (local.get $stride)))
            (v128.store (local.get $q) (local.get $a1))
            (local.set $q (i32.add (local.get $q) (local.get $stride)))
            (v128.store (local.get $q) (local.get $a2))
            (local.set $q (i32.add (local.get $q) (local.get $stride)))
            (v128.store (local.get $q) (local.get $a3))
            (local.set $j (i32.add (local.get $j) (i32.const 4)))
            (br $quads)))
        ;; The remaining 0 to 3 rows, one at a time.
        (block $singles_done
          (loop $singles
            (br_if $singles_done (i32.ge_u (local.get $j) (local.get $rows)))
            (local.set $a0 (v128.const i64x2 0 0))
            (local.set $p (i32.add (local.get $src) (local.get $x)))
            (local.set $c (i32.add (local.get $coef) (local.get $j)))
            (local.set $n (local.get $cols))
            (loop $single_cols
              (local.set $v (v128.load (local.get $p)))
              (local.set $t (i32.shl (i32.load8_u (local.get $c)) (i32.const 5)))
              (local.set $a0 (v128.xor (local.get $a0) (v128.xor
                (i8x16.swizzle (v128.load (local.get $t)) (v128.and (local.get $v) (local.get $mask)))
                (i8x16.swizzle (v128.load offset=16 (local.get $t)) (i8x16.shr_u (local.get $v) (i32.const 4))))))
              (local.set $p (i32.add (local.get $p) (local.get $stride)))
              (local.set $c (i32.add (local.get $c) (local.get $rows)))
              (br_if $single_cols (local.tee $n (i32.sub (local.get $n) (i32.const 1)))))
            (v128.store
              (i32.add (local.get $dst) (i32.add (i32.mul (local.get $j) (local.get $stride)) (local.get $x)))
              (local.get $a0))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $singles)))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (br $blocks)))))

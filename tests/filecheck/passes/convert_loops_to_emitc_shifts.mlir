// RUN: byoc-opt %s -p convert-loops-to-emitc -t c | filecheck %s

// Shifts in C: a left shift and a logical right shift run on the value as an
// unsigned of at least 32 bits (shifting a negative value, or into the sign of
// the int C promotes to, is undefined); an arithmetic right shift on the signed
// value. arith.remf is fmodf. The loop-level IR keeps amounts below the width.
// CHECK:      int32_t shifts(
// CHECK:        int8_t v8 = ((int8_t) (((uint32_t) v6) << ((uint32_t) v7))) >> v7;
// CHECK:        v4[0] = (uint16_t) (((uint32_t) v9) >> ((uint32_t) v9));
// CHECK:        float v11 = fmodf(v10, v10);
func.func @shifts(%x: memref<4xi8>, %n: memref<4xi8>, %u: memref<4xui16>, %out: memref<4xi8>, %out2: memref<4xui16>, %f: memref<4xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %a = memref.load %x[%c0] : memref<4xi8>
  %b = memref.load %n[%c0] : memref<4xi8>
  %l = arith.shli %a, %b : i8
  %r = arith.shrsi %l, %b : i8
  memref.store %r, %out[%c0] : memref<4xi8>
  %v = memref.load %u[%c0] : memref<4xui16>
  %w = arith.shrui %v, %v : ui16
  memref.store %w, %out2[%c0] : memref<4xui16>
  %g = memref.load %f[%c0] : memref<4xf32>
  %m = arith.remf %g, %g : f32
  memref.store %m, %f[%c0] : memref<4xf32>
  %ok = arith.constant 0 : i32
  func.return %ok : i32
}

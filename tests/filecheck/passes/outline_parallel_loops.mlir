// RUN: byoc-opt %s -p byoc-outline-parallel-loops | filecheck %s
// RUN: byoc-opt %s -p byoc-outline-parallel-loops -t c | filecheck %s --check-prefix=C
// RUN: byoc-opt %s -p byoc-outline-parallel-loops | byoc-opt --print-op-generic | byoc-opt -t c | filecheck %s --check-prefix=C

// byoc-outline-parallel-loops: an emitc.for marked byoc.parallel moves into a
// static function over a range of its iterations; an exported task function
// reads the values the loop captured from an array of void* and runs chunk
// `index`; the loop's place calls libbyoc's pool over min(trips, 64) chunks,
// or over fewer when the loop's byoc.chunks says so.

// CHECK:       emitc.include "byoc_runtime.h"
// CHECK-LABEL: emitc.func @scale_par0_body
// CHECK-SAME:    (%{{.*}}: !emitc.ptr<f32> {emitc.restrict, emitc.const}, %{{.*}}: !emitc.ptr<f32> {emitc.restrict}, %{{.*}}: i64, %{{.*}}: i64)
// CHECK-SAME:    attributes {specifiers = ["static"]}
// CHECK-LABEL: emitc.func @scale_par0(
// CHECK-SAME:    !emitc.ptr<!emitc.opaque<"void">>, %{{.*}}: i64)
// CHECK:         emitc.call @scale_par0_body
// CHECK-LABEL: emitc.func @scale(
// CHECK-NOT:     emitc.for
// CHECK:         emitc.verbatim "byoc_rt_parallel_for({}, scale_par0, byoc_slots_0);"
// CHECK-NOT:     byoc.parallel

// C:      #include "byoc_runtime.h"
// C:      static void scale_par0_body(const float* restrict v0, float* restrict v1, int64_t v2, int64_t v3) {
// C-NEXT:   for (int64_t v4 = v2; v4 < v3; v4 += 1) {
// C:          v1[v4] = v5 * 2.0f;
// C:      void scale_par0(void* v0, int64_t v1) {
// C:        scale_par0_body((float*) v{{[0-9]+}}, (float*) v{{[0-9]+}}, v{{[0-9]+}} + (((v1 * v{{[0-9]+}}) / v{{[0-9]+}}) * v{{[0-9]+}}), v{{[0-9]+}} + ((((v1 + 1) * v{{[0-9]+}}) / v{{[0-9]+}}) * v{{[0-9]+}}));
// C:      void scale(const float* restrict v0, float* restrict v1) {
// C:        int64_t [[TRIPS:v[0-9]+]] = (((1000 - 0) + 1) - 1) / 1;
// C-NEXT:   int64_t [[CHUNKS:v[0-9]+]] = ([[TRIPS]] < 64) ? [[TRIPS]] : 64;
// C-NEXT:   void* byoc_slots_0[6] = {(void*) v0, (void*) v1, (void*) (intptr_t) 0, (void*) (intptr_t) 1, (void*) (intptr_t) [[TRIPS]], (void*) (intptr_t) [[CHUNKS]]};
// C-NEXT:   byoc_rt_parallel_for([[CHUNKS]], scale_par0, byoc_slots_0);
emitc.func @scale(%a: !emitc.ptr<f32> {emitc.const, emitc.restrict}, %b: !emitc.ptr<f32> {emitc.restrict}) {
  %c0 = "emitc.constant"() <{value = 0 : i64}> : () -> i64
  %c1 = "emitc.constant"() <{value = 1 : i64}> : () -> i64
  %n = "emitc.constant"() <{value = 1000 : i64}> : () -> i64
  %two = "emitc.constant"() <{value = 2.0 : f32}> : () -> f32
  emitc.for %i = %c0 to %n step %c1 : i64 {
    %0 = emitc.subscript %a[%i] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
    %x = emitc.load %0 : !emitc.lvalue<f32>
    %y = emitc.mul %x, %two : (f32, f32) -> f32
    %1 = emitc.subscript %b[%i] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
    emitc.assign %y : f32 to %1 : !emitc.lvalue<f32>
  } attributes {byoc.parallel}
  emitc.return
}

// A loop that reads a float defined outside it stays sequential (and unmarked).
// CHECK-LABEL: emitc.func @captures_a_float
// CHECK:         emitc.for
// CHECK-NOT:     byoc.parallel
// CHECK:         emitc.return
// C-LABEL:   void captures_a_float(
// C:           for (int64_t
emitc.func @captures_a_float(%a: !emitc.ptr<f32> {emitc.restrict}, %s: f32) {
  %c0 = "emitc.constant"() <{value = 0 : i64}> : () -> i64
  %c1 = "emitc.constant"() <{value = 1 : i64}> : () -> i64
  %n = "emitc.constant"() <{value = 1000 : i64}> : () -> i64
  emitc.for %i = %c0 to %n step %c1 : i64 {
    %0 = emitc.subscript %a[%i] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
    emitc.assign %s : f32 to %0 : !emitc.lvalue<f32>
  } attributes {byoc.parallel}
  emitc.return
}

// byoc.chunks = 4: at most 4 chunks (a loop of little work).
// C-LABEL:   void few_chunks(
// C:           int64_t [[TRIPS:v[0-9]+]] = (((1000 - 0) + 1) - 1) / 1;
// C-NEXT:      int64_t [[CHUNKS:v[0-9]+]] = ([[TRIPS]] < 4) ? [[TRIPS]] : 4;
// C:           byoc_rt_parallel_for([[CHUNKS]], few_chunks_par1, byoc_slots_1);
// CHECK-LABEL: emitc.func @few_chunks(
// CHECK-NOT:     byoc.chunks
// CHECK:         emitc.return
emitc.func @few_chunks(%a: !emitc.ptr<f32> {emitc.restrict}) {
  %c0 = "emitc.constant"() <{value = 0 : i64}> : () -> i64
  %c1 = "emitc.constant"() <{value = 1 : i64}> : () -> i64
  %n = "emitc.constant"() <{value = 1000 : i64}> : () -> i64
  %zero = "emitc.constant"() <{value = 0.0 : f32}> : () -> f32
  emitc.for %i = %c0 to %n step %c1 : i64 {
    %0 = emitc.subscript %a[%i] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
    emitc.assign %zero : f32 to %0 : !emitc.lvalue<f32>
  } attributes {byoc.parallel, byoc.chunks = 4 : i64}
  emitc.return
}

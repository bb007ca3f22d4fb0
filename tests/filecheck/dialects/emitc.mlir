// RUN: byoc-opt %s | filecheck %s
// RUN: byoc-opt %s --print-op-generic | byoc-opt | filecheck %s
// RUN: byoc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK:      emitc.include <"math.h">
// CHECK-NEXT: emitc.include "kernels.h"
// CHECK-NEXT: emitc.verbatim "typedef float f32_t;"
// CHECK-NEXT: emitc.global static const @w : !emitc.array<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK-NEXT: emitc.global @counter : i32 = 3
// CHECK-NEXT: emitc.global extern @table : !emitc.array<4xi64>
// CHECK-NEXT: emitc.declare_func @kernel
// CHECK-NEXT: emitc.func private @ext(!emitc.ptr<f32> {emitc.restrict}, i32) -> i32 attributes {specifiers = ["extern"]}
// GENERIC:    "emitc.include"() <{include = "math.h", is_standard_include}> : () -> ()
// GENERIC:    "emitc.global"() <{sym_name = "w", type = !emitc.array<2xf32>, initial_value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>, static_specifier, const_specifier}> : () -> ()
// GENERIC:    "emitc.func"() <{sym_name = "ext", function_type = (!emitc.ptr<f32>, i32) -> i32, sym_visibility = "private", arg_attrs = [{emitc.restrict}, {}], specifiers = ["extern"]}> ({
emitc.include <"math.h">
emitc.include "kernels.h"
emitc.verbatim "typedef float f32_t;"
emitc.global static const @w : !emitc.array<2xf32> = dense<[1.0, 2.0]>
emitc.global @counter : i32 = 3
emitc.global extern @table : !emitc.array<4xi64>
emitc.declare_func @kernel
emitc.func private @ext(!emitc.ptr<f32> {emitc.restrict}, i32) -> i32 attributes {specifiers = ["extern"]}

// CHECK-LABEL: emitc.func @kernel(%in: !emitc.ptr<f32> {emitc.const, emitc.restrict}, %out: !emitc.ptr<f32> {emitc.restrict}, %n: i64) -> i32 attributes {specifiers = ["static"]} {
// CHECK-NEXT:    %c0 = "emitc.constant"() <{value = 0 : i64}> : () -> i64
// CHECK-NEXT:    %c1 = "emitc.constant"() <{value = 1 : i64}> : () -> i64
// CHECK-NEXT:    %one = "emitc.constant"() <{value = 1.000000e+00 : f32}> : () -> f32
// CHECK-NEXT:    %null = emitc.literal "NULL" : !emitc.ptr<f32>
// CHECK-NEXT:    %acc = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.lvalue<f32>
// CHECK-NEXT:    %arr = "emitc.variable"() <{value = 0.000000e+00 : f32}> : () -> !emitc.lvalue<f32>
// CHECK-NEXT:    %buf = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.array<4xf32>
// CHECK-NEXT:    %p = emitc.cast %buf : !emitc.array<4xf32> to !emitc.ptr<f32>
// CHECK-NEXT:    emitc.for %i = %c0 to %n step %c1 : i64 {
// CHECK-NEXT:      %s = emitc.subscript %in[%i] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
// CHECK-NEXT:      %v = emitc.load %s : !emitc.lvalue<f32>
// CHECK-NEXT:      %a = emitc.add %v, %one : (f32, f32) -> f32
// CHECK-NEXT:      %b = emitc.sub %a, %one : (f32, f32) -> f32
// CHECK-NEXT:      %m = emitc.mul %a, %b : (f32, f32) -> f32
// CHECK-NEXT:      %d = emitc.div %m, %b : (f32, f32) -> f32
// CHECK-NEXT:      %r = emitc.rem %i, %n : (i64, i64) -> i64
// CHECK-NEXT:      %ba = emitc.bitwise_and %i, %n : (i64, i64) -> i64
// CHECK-NEXT:      %bo = emitc.bitwise_or %i, %n : (i64, i64) -> i64
// CHECK-NEXT:      %bx = emitc.bitwise_xor %i, %n : (i64, i64) -> i64
// CHECK-NEXT:      %neg = emitc.unary_minus %d : (f32) -> f32
// CHECK-NEXT:      %c = emitc.cmp lt, %neg, %one : (f32, f32) -> i1
// CHECK-NEXT:      %c2 = emitc.cmp ne, %r, %ba : (i64, i64) -> i1
// CHECK-NEXT:      %and = emitc.logical_and %c, %c2 : i1, i1
// CHECK-NEXT:      %or = emitc.logical_or %c, %c2 : i1, i1
// CHECK-NEXT:      %not = emitc.logical_not %or : i1
// CHECK-NEXT:      %sel = emitc.conditional %and, %neg, %one : f32
// CHECK-NEXT:      %addr = emitc.apply "&"(%acc) : (!emitc.lvalue<f32>) -> !emitc.ptr<f32>
// CHECK-NEXT:      emitc.if %not {
// CHECK-NEXT:        emitc.assign %sel : f32 to %acc : !emitc.lvalue<f32>
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %t = emitc.call_opaque "tanhf"(%sel) : (f32) -> f32
// CHECK-NEXT:        emitc.assign %t : f32 to %acc : !emitc.lvalue<f32>
// CHECK-NEXT:      }
// CHECK-NEXT:      emitc.if %c {
// CHECK-NEXT:        emitc.assign %one : f32 to %arr : !emitc.lvalue<f32>
// CHECK-NEXT:      }
// CHECK-NEXT:      emitc.verbatim "/* {} */" args %bo : i64
// CHECK-NEXT:    }
// CHECK-NEXT:    %g = emitc.get_global @w : !emitc.array<2xf32>
// CHECK-NEXT:    %gs = emitc.get_global @counter : !emitc.lvalue<i32>
// CHECK-NEXT:    %k = "emitc.constant"() <{value = 0 : i32}> : () -> i32
// CHECK-NEXT:    %st = emitc.call @ext(%out, %k) : (!emitc.ptr<f32>, i32) -> i32
// CHECK-NEXT:    emitc.return %st : i32
// CHECK-NEXT:  }
// GENERIC:     "emitc.for"(%c0, %n, %c1) ({
// GENERIC:       %c = "emitc.cmp"(%neg, %one) <{predicate = 2 : i64}> : (f32, f32) -> i1
// GENERIC:       "emitc.yield"() : () -> ()
emitc.func @kernel(%in: !emitc.ptr<f32> {emitc.const, emitc.restrict}, %out: !emitc.ptr<f32> {emitc.restrict}, %n: i64) -> i32 attributes {specifiers = ["static"]} {
  %c0 = "emitc.constant"() <{value = 0 : i64}> : () -> i64
  %c1 = "emitc.constant"() <{value = 1 : i64}> : () -> i64
  %one = "emitc.constant"() <{value = 1.0 : f32}> : () -> f32
  %null = emitc.literal "NULL" : !emitc.ptr<f32>
  %acc = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.lvalue<f32>
  %arr = "emitc.variable"() <{value = 0.0 : f32}> : () -> !emitc.lvalue<f32>
  %buf = "emitc.variable"() <{value = #emitc.opaque<"">}> : () -> !emitc.array<4xf32>
  %p = emitc.cast %buf : !emitc.array<4xf32> to !emitc.ptr<f32>
  emitc.for %i = %c0 to %n step %c1 : i64 {
    %s = emitc.subscript %in[%i] : (!emitc.ptr<f32>, i64) -> !emitc.lvalue<f32>
    %v = emitc.load %s : !emitc.lvalue<f32>
    %a = emitc.add %v, %one : (f32, f32) -> f32
    %b = emitc.sub %a, %one : (f32, f32) -> f32
    %m = emitc.mul %a, %b : (f32, f32) -> f32
    %d = emitc.div %m, %b : (f32, f32) -> f32
    %r = emitc.rem %i, %n : (i64, i64) -> i64
    %ba = emitc.bitwise_and %i, %n : (i64, i64) -> i64
    %bo = emitc.bitwise_or %i, %n : (i64, i64) -> i64
    %bx = emitc.bitwise_xor %i, %n : (i64, i64) -> i64
    %neg = emitc.unary_minus %d : (f32) -> f32
    %c = emitc.cmp lt, %neg, %one : (f32, f32) -> i1
    %c2 = emitc.cmp ne, %r, %ba : (i64, i64) -> i1
    %and = emitc.logical_and %c, %c2 : i1, i1
    %or = emitc.logical_or %c, %c2 : i1, i1
    %not = emitc.logical_not %or : i1
    %sel = emitc.conditional %and, %neg, %one : f32
    %addr = emitc.apply "&"(%acc) : (!emitc.lvalue<f32>) -> !emitc.ptr<f32>
    emitc.if %not {
      emitc.assign %sel : f32 to %acc : !emitc.lvalue<f32>
    } else {
      %t = emitc.call_opaque "tanhf"(%sel) : (f32) -> f32
      emitc.assign %t : f32 to %acc : !emitc.lvalue<f32>
    }
    emitc.if %c {
      emitc.assign %one : f32 to %arr : !emitc.lvalue<f32>
    }
    emitc.verbatim "/* {} */" args %bo : i64
  }
  %g = emitc.get_global @w : !emitc.array<2xf32>
  %gs = emitc.get_global @counter : !emitc.lvalue<i32>
  %k = "emitc.constant"() <{value = 0 : i32}> : () -> i32
  %st = emitc.call @ext(%out, %k) : (!emitc.ptr<f32>, i32) -> i32
  emitc.return %st : i32
}

// An index-typed loop prints without a type; a function without results returns nothing.
// CHECK-LABEL: emitc.func @index_loop(%n: index) {
// CHECK-NEXT:    %z = "emitc.constant"() <{value = 0 : index}> : () -> index
// CHECK-NEXT:    %sz = "emitc.constant"() <{value = 8 : index}> : () -> !emitc.size_t
// CHECK-NEXT:    emitc.for %i = %z to %n step %n {
// CHECK-NEXT:    }
// CHECK-NEXT:    emitc.return
// CHECK-NEXT:  }
emitc.func @index_loop(%n: index) {
  %z = "emitc.constant"() <{value = 0 : index}> : () -> index
  %sz = "emitc.constant"() <{value = 8 : index}> : () -> !emitc.size_t
  emitc.for %i = %z to %n step %n {
  }
  emitc.return
}

"""FLOPs, bytes and pass of HLO instructions, read from a hand-written fused dot."""
from experiments.benchmark import hlo_cost

# a fused dot as XLA CPU prints it: [4,8,3] x [4,3,5] batched over 4, contracting 3
HLO = """HloModule m, is_scheduled=true

%fused_computation (param_0: f32[4,8,3], param_1: f32[4,3,5]) -> f32[4,8,5] {
  %param_0 = f32[4,8,3]{2,1,0} parameter(0)
  %param_1 = f32[4,3,5]{2,1,0} parameter(1)
  %dot.1 = f32[4,8,5]{2,1,0} dot(%param_0, %param_1), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, metadata={op_name="jit(f)/transpose(jvp(bqk,bkd->bqd))/dot_general"}
  ROOT %exponential.1 = f32[4,8,5]{2,1,0} exponential(%dot.1)
}

ENTRY %main (a: f32[4,8,3], b: f32[4,3,5]) -> f32[4,8,5] {
  %a = f32[4,8,3]{2,1,0} parameter(0), metadata={op_name="a"}
  %b = f32[4,3,5]{2,1,0} parameter(1)
  %copy.2 = f32[4,8,3]{2,1,0} copy(%a)
  ROOT %ynn_fusion = f32[4,8,5]{2,1,0} fusion(%copy.2, %b), kind=kCustom, calls=%fused_computation
}
"""


def test_hand_written_hlo_counts_dot_and_elementwise_flops_and_bytes():
    ops = hlo_cost.hlo_ops(HLO)
    assert set(ops) == {"copy.2", "ynn_fusion"}  # parameters do no work
    fusion = ops["ynn_fusion"]
    assert fusion.dot_flops == 2 * 4 * 8 * 5 * 3          # 2 * out elements * contracted
    assert fusion.flops == fusion.dot_flops + 4 * 8 * 5    # + one exp per output element
    assert fusion.bytes == 4 * (4 * 8 * 3 + 4 * 3 * 5 + 4 * 8 * 5)
    assert fusion.dots == ["f32[4,8,3] x f32[4,3,5] -> f32[4,8,5]"]
    assert fusion.pass_ == "backward"                      # its body came from a transpose
    assert ops["copy.2"].pass_ == "other" and ops["copy.2"].flops == 0

package dev.kafkaiq.broker;

import jdk.internal.org.objectweb.asm.ClassReader;
import jdk.internal.org.objectweb.asm.ClassVisitor;
import jdk.internal.org.objectweb.asm.ClassWriter;
import jdk.internal.org.objectweb.asm.MethodVisitor;
import jdk.internal.org.objectweb.asm.Opcodes;

/**
 * The agents' bytecode edits, apart so that the agents' own classes link before the JDK's ASM
 * package is opened to them. Neither adds a branch, so the stack map frames stay valid.
 */
final class AsmEdit {
    private AsmEdit() {}

    /** ClientConfigAgent: at the start of the constructor, originals (local 2) = ClientConfigAgent.merge(originals). */
    static byte[] prependMerge(byte[] bytes, String constructor) {
        ClassReader reader = new ClassReader(bytes);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        reader.accept(new ClassVisitor(Opcodes.ASM8, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String descriptor, String signature, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, name, descriptor, signature, exceptions);
                if (!"<init>".equals(name) || !constructor.equals(descriptor)) return mv;
                return new MethodVisitor(Opcodes.ASM8, mv) {
                    @Override
                    public void visitCode() {
                        super.visitCode();
                        super.visitVarInsn(Opcodes.ALOAD, 2);
                        super.visitMethodInsn(Opcodes.INVOKESTATIC, "dev/kafkaiq/broker/ClientConfigAgent", "merge", "(Ljava/util/Map;)Ljava/util/Map;", false);
                        super.visitVarInsn(Opcodes.ASTORE, 2);
                    }
                };
            }
        }, 0);
        return writer.toByteArray();
    }

    /**
     * BrokerPatches: before each ARETURN of an instance method taking (String, int, ...), the
     * returned value goes through helper(value, this, arg1, arg2). Null when the method is absent.
     */
    static byte[] filterReturns(byte[] bytes, String method, String descriptor, String helperOwner, String helper, String helperDescriptor) {
        ClassReader reader = new ClassReader(bytes);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        boolean[] found = {false};
        reader.accept(new ClassVisitor(Opcodes.ASM8, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
                if (!method.equals(name) || !descriptor.equals(desc) || (access & Opcodes.ACC_STATIC) != 0) return mv;
                found[0] = true;
                return new MethodVisitor(Opcodes.ASM8, mv) {
                    @Override
                    public void visitInsn(int opcode) {
                        if (opcode == Opcodes.ARETURN) {
                            super.visitVarInsn(Opcodes.ALOAD, 0);
                            super.visitVarInsn(Opcodes.ALOAD, 1);
                            super.visitVarInsn(Opcodes.ILOAD, 2);
                            super.visitMethodInsn(Opcodes.INVOKESTATIC, helperOwner, helper, helperDescriptor, false);
                        }
                        super.visitInsn(opcode);
                    }
                };
            }
        }, 0);
        return found[0] ? writer.toByteArray() : null;
    }
}

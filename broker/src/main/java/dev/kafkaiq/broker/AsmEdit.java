package dev.kafkaiq.broker;

import jdk.internal.org.objectweb.asm.ClassReader;
import jdk.internal.org.objectweb.asm.ClassVisitor;
import jdk.internal.org.objectweb.asm.ClassWriter;
import jdk.internal.org.objectweb.asm.MethodVisitor;
import jdk.internal.org.objectweb.asm.Opcodes;

/**
 * The one bytecode edit of ClientConfigAgent, apart so that the agent's own class links before
 * the JDK's ASM package is opened to it: at the start of the constructor, originals (local 2) =
 * ClientConfigAgent.merge(originals). No branch is added, so the stack map frames stay valid.
 */
final class AsmEdit {
    private AsmEdit() {}

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
}

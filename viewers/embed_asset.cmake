# Embeds a text file as a C string: -DIN=file -DOUT=file.c -DVAR=name
file(READ ${IN} txt)
string(REPLACE "\\" "\\\\" txt "${txt}")
string(REPLACE "\"" "\\\"" txt "${txt}")
string(REPLACE "\n" "\\n\"\n\"" txt "${txt}")
file(WRITE ${OUT} "/* generated from ${IN} */\nconst char ${VAR}[] =\n\"${txt}\";\n")

/* No image: new databases are made by running the schema (the image
 * generator itself, and builds that cannot run it). */
#include "store_internal.h"

const unsigned char pp_store_image[1];
const size_t pp_store_image_len = 0;

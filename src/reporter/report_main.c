/* faultline-report: the reporter program; everything is in fl_reporter_lib. */
#include "fl_reporter.h"

int main(int argc, char **argv)
{
    return fl_reporter_main(argc, argv);
}
